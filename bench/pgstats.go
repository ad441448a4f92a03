package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/fleetsaga/fleetsaga/internal/devstack"
)

// Statement counting modes.
const (
	pgModeStatements = "pg_stat_statements" // executed statements (calls), per database
	pgModeXact       = "pg_stat_database.xact_commit+xact_rollback"
)

// pgCounter counts the statements one database executes.
type pgCounter struct {
	admin *sql.DB
	mode  string
}

// enablePGStatStatements makes pg_stat_statements available: on a private
// cluster it preloads the library (ALTER SYSTEM, then a stop and a start,
// once: the setting stays in the cluster); on a DATABASE_URL server it is
// used only when the server already preloads it. It returns the server to
// use from then on.
func enablePGStatStatements(ctx context.Context, pg *devstack.Postgres, dir string, log zerolog.Logger) (*devstack.Postgres, *pgCounter, error) {
	admin, err := sql.Open("postgres", pg.URL)
	if err != nil {
		return pg, nil, err
	}
	c := &pgCounter{admin: admin, mode: pgModeXact}
	var libs string
	if err := admin.QueryRowContext(ctx, `SHOW shared_preload_libraries`).Scan(&libs); err != nil {
		return pg, c, nil
	}
	if !strings.Contains(libs, "pg_stat_statements") && pg.Private {
		if _, err := admin.ExecContext(ctx, `ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`); err != nil {
			log.Warn().Err(err).Msg("cannot preload pg_stat_statements; counting transactions instead")
			return pg, c, nil
		}
		admin.Close()
		// Not pg.Restart: `pg_ctl restart` without -l leaves the new
		// postmaster holding the caller's output pipe, and the call never
		// returns. Stop, then start the same cluster again.
		log.Info().Msg("restarting the private PostgreSQL with pg_stat_statements preloaded")
		if err := pg.Stop(); err != nil {
			return pg, nil, err
		}
		if pg, err = devstack.FindOrStartPostgres(ctx, dir, log); err != nil {
			return pg, nil, err
		}
		if admin, err = sql.Open("postgres", pg.URL); err != nil {
			return pg, nil, err
		}
		c.admin = admin
		if err := waitPG(ctx, admin); err != nil {
			return pg, nil, err
		}
		if err := admin.QueryRowContext(ctx, `SHOW shared_preload_libraries`).Scan(&libs); err != nil {
			return pg, nil, err
		}
	}
	if strings.Contains(libs, "pg_stat_statements") {
		if _, err := admin.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err == nil {
			c.mode = pgModeStatements
		} else {
			log.Warn().Err(err).Msg("pg_stat_statements preloaded but CREATE EXTENSION failed; counting transactions")
		}
	}
	return pg, c, nil
}

func waitPG(ctx context.Context, db *sql.DB) error {
	var err error
	for range 100 {
		if err = db.PingContext(ctx); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// count returns the statements (or transactions) database dbname has run.
func (c *pgCounter) count(ctx context.Context, dbname string) (int64, error) {
	var n sql.NullInt64
	var err error
	if c.mode == pgModeStatements {
		err = c.admin.QueryRowContext(ctx, `SELECT sum(calls)::bigint FROM pg_stat_statements
			WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)`, dbname).Scan(&n)
	} else {
		// Cumulative statistics are flushed lazily (about once a second).
		_, _ = c.admin.ExecContext(ctx, `SELECT pg_stat_clear_snapshot()`)
		err = c.admin.QueryRowContext(ctx, `SELECT (xact_commit + xact_rollback)::bigint FROM pg_stat_database
			WHERE datname = $1`, dbname).Scan(&n)
	}
	return n.Int64, err
}

// StatementCount is one statement's share of a run.
type StatementCount struct {
	Calls int64  `json:"calls"`
	Query string `json:"query"`
}

// top returns the most executed statements of dbname (pg_stat_statements
// only), as cumulative counts since the database was created.
func (c *pgCounter) top(ctx context.Context, dbname string, limit int) []StatementCount {
	if c.mode != pgModeStatements {
		return nil
	}
	rows, err := c.admin.QueryContext(ctx, `SELECT calls, query FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) ORDER BY calls DESC LIMIT $2`, dbname, limit)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []StatementCount
	for rows.Next() {
		var s StatementCount
		if rows.Scan(&s.Calls, &s.Query) == nil {
			s.Query = strings.Join(strings.Fields(s.Query), " ")
			if len(s.Query) > 160 {
				s.Query = s.Query[:160] + "…"
			}
			out = append(out, s)
		}
	}
	return out
}

// postmasterPID reads the PID of the server's postmaster from its data
// directory: a private cluster's, or a local server's when this user may
// read it (0 otherwise: its CPU is then not measured, and counts as other
// load). A shared server's CPU includes its other databases' work.
func (c *pgCounter) postmasterPID(ctx context.Context) int {
	var dir string
	if err := c.admin.QueryRowContext(ctx, `SHOW data_directory`).Scan(&dir); err != nil {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

func (c *pgCounter) close() {
	if c != nil && c.admin != nil {
		_ = c.admin.Close()
	}
}

func (c *pgCounter) String() string {
	return fmt.Sprintf("PostgreSQL statements counted with %s", c.mode)
}
