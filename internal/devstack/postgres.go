// Package devstack brings up what fleetsaga needs on a developer machine or a
// CI runner without Docker: a PostgreSQL it finds or starts itself, a pinned
// Temporal dev server with its Web UI, fleetsim and workers.
package devstack

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	_ "github.com/lib/pq" // PostgreSQL driver
	"github.com/rs/zerolog"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// Postgres is a database server the stack uses: the one DATABASE_URL or the
// libpq variables name, or a private cluster this package started.
type Postgres struct {
	// URL is an admin connection URL (database "postgres" for a private cluster).
	URL     string
	Private bool
	// Source says where the server came from, for the one log line that
	// tells the user which one was chosen.
	Source string
	dir    string
	binDir string
}

// Ping reports whether url answers within a few seconds; its error never
// holds url's password (lib/pq's parse errors quote the whole URL).
func Ping(ctx context.Context, url string) error {
	if err := ledger.CheckDSN(url); err != nil {
		return err
	}
	db, err := sql.Open("postgres", url)
	if err != nil {
		return ledger.RedactError(err, url)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return ledger.RedactError(db.PingContext(ctx), url)
}

// FindOrStartPostgres uses what the machine offers, in the order a user
// expects: DATABASE_URL; otherwise the standard libpq variables (PGHOST,
// PGPORT, …) where the user set them; otherwise a private cluster for the
// stack whose state lives in dir. A server the user did not name is never
// written to.
func FindOrStartPostgres(ctx context.Context, dir string, log zerolog.Logger) (*Postgres, error) {
	for _, named := range []struct{ source, url string }{
		{"DATABASE_URL", os.Getenv("DATABASE_URL")},
		{"the libpq environment (" + strings.Join(libpqVarsSet(), ", ") + ")", libpqURL()},
	} {
		if named.url == "" {
			continue
		}
		if err := Ping(ctx, named.url); err != nil {
			log.Warn().Err(err).Str("url", ledger.RedactURL(named.url)).Msgf("PostgreSQL from %s does not answer; trying the next option", named.source)
			continue
		}
		log.Info().Str("url", ledger.RedactURL(named.url)).Msgf("PostgreSQL: using the server named by %s", named.source)
		return &Postgres{URL: named.url, Source: named.source}, nil
	}
	binDir, err := postgresBinDir(log)
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	ReapLeftovers(log)
	pg := &Postgres{Private: true, Source: "a private cluster", dir: PrivateClusterDir(dir), binDir: binDir}
	if err := pg.start(ctx); err != nil {
		return nil, err
	}
	log.Info().Str("url", pg.URL).Str("dir", pg.dir).Msg("PostgreSQL: using a private cluster (no DATABASE_URL or PGHOST/PGPORT/… set)")
	return pg, nil
}

// postgresBinDir finds initdb/pg_ctl, installing Debian's postgresql package
// when none is present and we are root.
func postgresBinDir(log zerolog.Logger) (string, error) {
	if dir := newestPGBin(); dir != "" {
		return dir, nil
	}
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("apt-get"); err == nil {
			log.Info().Msg("PostgreSQL binaries not found; installing Debian's postgresql package")
			cmd := exec.Command("sh", "-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql")
			if out, err := cmd.CombinedOutput(); err != nil {
				return "", fmt.Errorf("install postgresql: %v: %s", err, lastLines(out, 5))
			}
			if dir := newestPGBin(); dir != "" {
				return dir, nil
			}
		}
	}
	return "", errors.New("no PostgreSQL server binaries found: set DATABASE_URL to a database that answers, or install them (Debian: apt-get install postgresql)")
}

func newestPGBin() string {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool { return pgMajor(matches[i]) > pgMajor(matches[j]) })
	if len(matches) > 0 {
		return filepath.Dir(matches[0])
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

func pgMajor(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

func (pg *Postgres) start(ctx context.Context) error {
	owner, err := serverUser()
	if err != nil {
		return err
	}
	if err := claimPrivateDir(pg.dir, owner); err != nil {
		return err
	}
	if err := pg.initAndStart(ctx, owner); err != nil {
		_ = reap(pg.dir)
		return err
	}
	return nil
}

func (pg *Postgres) initAndStart(ctx context.Context, owner *user.User) error {
	dataDir := filepath.Join(pg.dir, "data")
	if out, err := pg.run(ctx, owner, "initdb", "-D", dataDir, "-A", "trust", "-U", "postgres", "--no-sync"); err != nil {
		return fmt.Errorf("initdb: %v: %s", err, lastLines(out, 5))
	}
	// A port picked free may be taken before the server binds it (tests
	// start many stacks at once): a start that lost it tries another.
	logPath := filepath.Join(pg.dir, "postgres.log")
	for attempt := 1; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			return err
		}
		pg.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
		opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300", port, pg.dir)
		out, err := pg.run(ctx, owner, "pg_ctl", "-D", dataDir, "-o", opts, "-l", logPath, "-w", "-t", "60", "start")
		if err == nil {
			return nil
		}
		if log, _ := os.ReadFile(logPath); attempt < 3 && bytes.Contains(log, []byte("Address already in use")) {
			_ = os.Truncate(logPath, 0)
			continue
		}
		return fmt.Errorf("pg_ctl start: %v: %s (log: %s)", err, lastLines(out, 5), logPath)
	}
}

// serverUser is who runs the private cluster: initdb refuses root, so as
// root it is the "postgres" user (nil: ourselves).
func serverUser() (*user.User, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("running as root and there is no 'postgres' user to own the private cluster")
	}
	return u, nil
}

// Stop stops a private cluster and removes it: the next start is fresh, so
// the ledger never outlives the simulated fleet it describes. A server the
// user named is left alone.
func (pg *Postgres) Stop() error {
	if !pg.Private {
		return nil
	}
	owner, _ := serverUser()
	out, err := pg.run(context.Background(), owner, "pg_ctl", "-D", filepath.Join(pg.dir, "data"), "-m", "fast", "-w", "stop")
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, lastLines(out, 3))
	}
	return os.RemoveAll(pg.dir)
}

// Restart stops and starts a private cluster on the same port (chaos tests).
func (pg *Postgres) Restart(ctx context.Context) error {
	if !pg.Private {
		return errors.New("cannot restart a PostgreSQL this stack did not start")
	}
	owner, _ := serverUser()
	// -l: a restarted server must not inherit our output pipe (the call
	// would never return).
	out, err := pg.run(ctx, owner, "pg_ctl", "-D", filepath.Join(pg.dir, "data"), "-l", filepath.Join(pg.dir, "postgres.log"),
		"-m", "fast", "-w", "restart")
	if err != nil {
		return fmt.Errorf("pg_ctl restart: %v: %s", err, lastLines(out, 3))
	}
	return nil
}

func (pg *Postgres) run(ctx context.Context, owner *user.User, prog string, args ...string) ([]byte, error) {
	path := filepath.Join(pg.binDir, prog)
	var cmd *exec.Cmd
	if owner != nil {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", owner.Username, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = "/"
	// The server is private: the user's libpq variables (PGPORT, PGDATA, …)
	// are for clients and must not steer it.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd.CombinedOutput()
}

// CreateDatabase creates a fresh database on the server adminURL points to
// and returns its URL.
func CreateDatabase(ctx context.Context, adminURL, name string) (string, error) {
	db, err := sql.Open("postgres", adminURL)
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE DATABASE `+quoteIdent(name)); err != nil {
		var exists bool
		if qerr := db.QueryRowContext(ctx, `SELECT true FROM pg_database WHERE datname = $1`, name).Scan(&exists); qerr != nil || !exists {
			return "", fmt.Errorf("create database %s: %w", name, err)
		}
	}
	return withDatabase(adminURL, name)
}

// DropDatabase drops a database created by CreateDatabase.
func DropDatabase(ctx context.Context, adminURL, name string) error {
	db, err := sql.Open("postgres", adminURL)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `DROP DATABASE IF EXISTS `+quoteIdent(name)+` WITH (FORCE)`)
	return err
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
