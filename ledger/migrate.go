package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fleetsaga/fleetsaga/schema"
)

// migrationLockKey is the advisory lock that serialises migrations across
// workers starting at the same time ("fleetsaga" in ASCII, truncated).
const migrationLockKey int64 = 0x666c656574736167

// Migration is one numbered schema file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the embedded migrations in version order.
func Migrations() ([]Migration, error) {
	entries, err := fs.Glob(schema.FS, "*.sql")
	if err != nil {
		return nil, err
	}
	var out []Migration
	seen := map[int]string{}
	for _, name := range entries {
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %q: name must start with a positive number and '_'", name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %q and %q share version %d", prev, name, v)
		}
		seen[v] = name
		body, err := fs.ReadFile(schema.FS, name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// migrationLockWait bounds how long Migrate waits for another holder of
// migrationLockKey (a worker migrating at the same time takes seconds).
var migrationLockWait = 2 * time.Minute

// migrationLockPoll is how often Migrate tries the lock meanwhile: short
// beside a migration, cheap for the server.
const migrationLockPoll = 100 * time.Millisecond

// Migrate applies every embedded migration the database lacks, each in its
// own transaction, holding an advisory lock so concurrent workers serialise.
// It refuses a database that has a migration this binary does not know
// (a newer schema), and, when a migration is pending, a role that is not
// the ledger's owner (a worker's least-privilege role: schema/0016_worker_role.sql).
// An up-to-date ledger needs no privilege beyond reading schema_migration,
// and no lock: a login that holds the lock (any login may take an advisory
// lock) cannot hold off the start of a worker that has nothing to apply.
// With a migration pending it waits for the lock at most migrationLockWait,
// then fails naming who holds it. It returns the versions it applied.
func Migrate(ctx context.Context, db *sql.DB) ([]int, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	pending, err := pendingMigrations(ctx, conn)
	if err != nil || len(pending) == 0 {
		return nil, err
	}
	if err := checkMayMigrate(ctx, conn, pending); err != nil {
		return nil, err
	}
	if err := takeMigrationLock(ctx, conn, pending); err != nil {
		return nil, err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLockKey) //nolint:errcheck

	// Another migrator may have applied them while this one waited.
	if pending, err = pendingMigrations(ctx, conn); err != nil || len(pending) == 0 {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migration (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("migrate: create schema_migration: %w", err)
	}
	var done []int
	for _, m := range pending {
		if err := applyOne(ctx, conn, m); err != nil {
			return done, err
		}
		done = append(done, m.Version)
	}
	return done, nil
}

// takeMigrationLock takes migrationLockKey on conn, trying every
// migrationLockPoll for migrationLockWait; past it, the error names the sessions that hold
// the lock (role, application, client address, pid).
func takeMigrationLock(ctx context.Context, conn *sql.Conn, pending []Migration) error {
	deadline := time.Now().Add(migrationLockWait)
	for {
		var got bool
		if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, migrationLockKey).Scan(&got); err != nil {
			return fmt.Errorf("migrate: take advisory lock: %w", err)
		}
		if got {
			return nil
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("migrate: wait for the migration lock: %w", ctx.Err())
		case <-time.After(migrationLockPoll):
		}
	}
	holders, err := migrationLockHolders(ctx, conn)
	if err != nil {
		return err
	}
	return fmt.Errorf("migrate: %s pending, but the migration lock (pg_advisory_lock(%d)) has been held for over %s by %s: "+
		"end that session (pg_terminate_backend(pid), as the ledger's owner or a superuser) or let its migration finish, then migrate again",
		describe(pending), migrationLockKey, migrationLockWait, holders)
}

// migrationLockHolders names the sessions holding migrationLockKey. A
// bigint advisory key is held as classid (high 32 bits), objid (low 32
// bits), objsubid 1.
func migrationLockHolders(ctx context.Context, conn *sql.Conn) (string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT l.pid, coalesce(a.usename::text, '?'), coalesce(a.application_name, ''),
		coalesce(host(a.client_addr), 'local')
		FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND l.classid::bigint = ($1::bigint >> 32) AND l.objid::bigint = ($1::bigint & x'ffffffff'::bigint)
		ORDER BY l.pid`, migrationLockKey)
	if err != nil {
		return "", fmt.Errorf("migrate: find the migration lock's holder: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var pid int
		var user, app, addr string
		if err := rows.Scan(&pid, &user, &app, &addr); err != nil {
			return "", err
		}
		h := fmt.Sprintf("role %s (pid %d, client %s", user, pid, addr)
		if app != "" {
			h += ", application " + strconv.Quote(app)
		}
		out = append(out, h+")")
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	if len(out) == 0 {
		return "a session this role may not see", nil
	}
	return strings.Join(out, ", "), nil
}

// CheckSchema is what a worker that may not migrate (--migrate=false)
// checks at start: the ledger holds every migration this binary knows, and
// none it does not. Its error names the missing migrations and who may
// apply them.
func CheckSchema(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("check ledger schema: %w", err)
	}
	defer conn.Close()
	pending, err := pendingMigrations(ctx, conn)
	if err != nil || len(pending) == 0 {
		return err
	}
	owner, err := ledgerOwner(ctx, conn)
	if err != nil {
		return err
	}
	return fmt.Errorf("ledger schema lacks %s, which this build needs: run `starter migrate` as %s first", describe(pending), owner)
}

// pendingMigrations is the embedded migrations the database lacks, in
// order; a migration the database has and this binary does not know is an
// error.
func pendingMigrations(ctx context.Context, conn *sql.Conn) ([]Migration, error) {
	known, err := Migrations()
	if err != nil {
		return nil, err
	}
	var exists bool
	if err := conn.QueryRowContext(ctx, `SELECT to_regclass('schema_migration') IS NOT NULL`).Scan(&exists); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if !exists {
		return known, nil
	}
	applied, err := appliedVersions(ctx, conn)
	if err != nil {
		return nil, err
	}
	knownSet := map[int]bool{}
	for _, m := range known {
		knownSet[m.Version] = true
	}
	for v, name := range applied {
		if !knownSet[v] {
			return nil, fmt.Errorf("database schema has migration %d (%s) that this binary does not know: it is newer than this build; upgrade fleetsaga", v, name)
		}
	}
	var pending []Migration
	for _, m := range known {
		if _, ok := applied[m.Version]; !ok {
			pending = append(pending, m)
		}
	}
	return pending, nil
}

// checkMayMigrate refuses a role that does not own the ledger (is not, or
// has not the privileges of, schema_migration's owner), before it changes
// anything: a worker's role would fail half-way with a privilege error.
func checkMayMigrate(ctx context.Context, conn *sql.Conn, pending []Migration) error {
	var may bool
	var me string
	err := conn.QueryRowContext(ctx, `SELECT current_user, coalesce((SELECT pg_has_role(relowner, 'USAGE') FROM pg_class
		WHERE oid = to_regclass('schema_migration')), has_schema_privilege(current_schema(), 'CREATE'), false)`).Scan(&me, &may)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if may {
		return nil
	}
	owner, err := ledgerOwner(ctx, conn)
	if err != nil {
		return err
	}
	return fmt.Errorf("ledger schema lacks %s and role %s may not migrate it: run `starter migrate` as %s", describe(pending), me, owner)
}

// ledgerOwner names the role that owns the ledger's tables (the one that
// migrates it), or says there is none yet.
func ledgerOwner(ctx context.Context, conn *sql.Conn) (string, error) {
	var owner sql.NullString
	if err := conn.QueryRowContext(ctx, `SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = to_regclass('schema_migration')`).Scan(&owner); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("migrate: %w", err)
	}
	if !owner.Valid {
		return "the role that is to own the ledger (the database has no ledger yet)", nil
	}
	return "the ledger's owner (role " + owner.String + ")", nil
}

// describe names migrations: "migration 16 (0016_worker_role.sql)", or
// "3 migrations, 16 (0016_worker_role.sql) to 18 (0018_function_search_path.sql)".
func describe(ms []Migration) string {
	if len(ms) == 1 {
		return fmt.Sprintf("migration %d (%s)", ms[0].Version, ms[0].Name)
	}
	first, last := ms[0], ms[len(ms)-1]
	return fmt.Sprintf("%d migrations, %d (%s) to %d (%s)", len(ms), first.Version, first.Name, last.Version, last.Name)
}

func appliedVersions(ctx context.Context, conn *sql.Conn) (map[int]string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT version, name FROM schema_migration`)
	if err != nil {
		return nil, fmt.Errorf("migrate: read applied versions: %w", err)
	}
	defer rows.Close()
	out := map[int]string{}
	for rows.Next() {
		var v int
		var name string
		if err := rows.Scan(&v, &name); err != nil {
			return nil, err
		}
		out[v] = name
	}
	return out, rows.Err()
}

func applyOne(ctx context.Context, conn *sql.Conn, m Migration) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migration (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
		return fmt.Errorf("migration %s: record: %w", m.Name, err)
	}
	return tx.Commit()
}
