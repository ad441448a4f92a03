package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

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

// Migrate applies every embedded migration the database lacks, each in its
// own transaction, holding an advisory lock so concurrent workers serialise.
// It refuses a database that has a migration this binary does not know
// (a newer schema). It returns the versions it applied.
func Migrate(ctx context.Context, db *sql.DB) ([]int, error) {
	known, err := Migrations()
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey); err != nil {
		return nil, fmt.Errorf("migrate: take advisory lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLockKey) //nolint:errcheck

	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migration (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("migrate: create schema_migration: %w", err)
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
	var done []int
	for _, m := range known {
		if _, ok := applied[m.Version]; ok {
			continue
		}
		if err := applyOne(ctx, conn, m); err != nil {
			return done, err
		}
		done = append(done, m.Version)
	}
	return done, nil
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
