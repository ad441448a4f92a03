package ledger_test

// What a worker's login could do to the ledger beyond its tables' grants
// (ledger/testdata/redteam_worker_role_psql.txt): shadow the functions'
// tables with temporary ones, hold the migration lock, change its own
// session defaults, or be the role 0016 grants to.

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// Every function of the ledger's schema (triggers and the hash functions
// they call) runs with search_path pg_catalog, public, pg_temp: a
// temporary table cannot stand in for a table it reads.
func TestLedgerFunctionsRunWithAFixedSearchPath(t *testing.T) {
	env := testenv.New(t)
	rows, err := env.Store.DB().Query(`SELECT p.oid::regprocedure::text, coalesce(array_to_string(p.proconfig, ' '), '')
		FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
		AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e') ORDER BY 1`)
	require.NoError(t, err)
	defer rows.Close()
	n := 0
	for rows.Next() {
		var fn, config string
		require.NoError(t, rows.Scan(&fn, &config))
		assert.Equal(t, "search_path=pg_catalog, public, pg_temp", config, fn)
		n++
	}
	require.NoError(t, rows.Err())
	assert.GreaterOrEqual(t, n, 12, "the schema's functions")
}

// lockHolder is a connection of a worker's login holding the migration
// lock, and the login's name.
func lockHolder(t *testing.T, env *testenv.Env) (*sql.Conn, string) {
	t.Helper()
	raw := env.WorkerRoleURL()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	w, err := ledger.Open(context.Background(), raw)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	conn := workerConn(t, w)
	_, err = conn.ExecContext(context.Background(), `SELECT pg_advisory_lock($1)`, ledger.MigrationLockKey)
	require.NoError(t, err, "any login may take an advisory lock")
	return conn, u.User.Username()
}

// A login holding the migration lock does not hold off a migrate (or a
// worker's start) that has nothing to apply.
func TestMigrateWithNothingPendingTakesNoLock(t *testing.T) {
	env := testenv.New(t)
	lockHolder(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	applied, err := env.Store.Migrate(ctx)
	require.NoError(t, err)
	assert.Empty(t, applied)
}

// With a migration pending, Migrate waits for the lock a bounded time and
// then fails naming the login that holds it; once it is let go, the
// migration applies.
func TestMigrateWaitsBoundedForTheLockAndNamesItsHolder(t *testing.T) {
	env := testenv.New(t)
	defer ledger.SetMigrationLockWait(time.Second)()
	ctx := context.Background()
	_, err := env.Store.DB().Exec(`DELETE FROM schema_migration WHERE version = 18`) // re-applies: CREATE OR REPLACE
	require.NoError(t, err)
	conn, login := lockHolder(t, env)

	start := time.Now()
	_, err = env.Store.Migrate(ctx)
	require.Error(t, err)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Contains(t, err.Error(), "migration 18 (0018_function_search_path.sql) pending")
	assert.Contains(t, err.Error(), "role "+login+" (pid ")

	_, err = conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, ledger.MigrationLockKey)
	require.NoError(t, err)
	applied, err := env.Store.Migrate(ctx)
	require.NoError(t, err)
	assert.Equal(t, []int{18}, applied)
}

// A login may set its own session defaults (ALTER ROLE … SET); the ones
// the ledger relies on are the ledger's in every connection it opens,
// unless its URL sets them.
func TestWorkerLoginsOwnSessionDefaultsDoNotApply(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	raw := env.WorkerRoleURL()
	w, err := ledger.Open(ctx, raw)
	require.NoError(t, err)
	for _, set := range []string{
		`ALTER ROLE CURRENT_USER SET default_transaction_read_only = on`,
		`ALTER ROLE CURRENT_USER SET synchronous_commit = off`,
		`ALTER ROLE CURRENT_USER SET default_transaction_isolation = serializable`,
		`ALTER ROLE CURRENT_USER SET search_path = pg_temp, public`,
	} {
		_, err := w.DB().ExecContext(ctx, set)
		require.NoError(t, err, "a login sets its own defaults: %s", set)
	}
	require.NoError(t, w.Close())

	show := func(s *ledger.Store, name string) string {
		var v string
		require.NoError(t, s.DB().QueryRowContext(ctx, `SELECT current_setting($1)`, name).Scan(&v))
		return v
	}
	w = open(t, raw)
	assert.Equal(t, "off", show(w, "default_transaction_read_only"))
	assert.Equal(t, "on", show(w, "synchronous_commit"))
	assert.Equal(t, "read committed", show(w, "default_transaction_isolation"))
	assert.Equal(t, "public", show(w, "search_path"))
	require.NoError(t, w.RecordExposed(ctx, "exposed:k-defaults", "r1", "start"), "the worker appends")

	// The URL's own settings stay the operator's.
	u, err := url.Parse(raw)
	require.NoError(t, err)
	q := u.Query()
	q.Set("synchronous_commit", "remote_write")
	q.Set("options", "-c default_transaction_isolation=repeatable\\ read")
	u.RawQuery = q.Encode()
	w = open(t, u.String())
	assert.Equal(t, "remote_write", show(w, "synchronous_commit"))
	assert.Equal(t, "repeatable read", show(w, "default_transaction_isolation"))
	assert.Equal(t, "off", show(w, "default_transaction_read_only"))
}

func open(t *testing.T, raw string) *ledger.Store {
	t.Helper()
	s, err := ledger.Open(context.Background(), raw)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Migration 0016 grants to an existing fleetsaga_worker only if it is the
// NOLOGIN group it is meant to be. The test runs 0016's SQL with the
// role's name replaced by one of its own (roles are the server's: the
// shared fleetsaga_worker stays as it is), in a transaction rolled back.
func TestWorkerRoleMigrationRefusesAnExistingRoleThatCanLogIn(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	migrations, err := ledger.Migrations()
	require.NoError(t, err)
	var sql16 string
	for _, m := range migrations {
		if m.Version == 16 {
			sql16 = m.SQL
		}
	}
	require.NotEmpty(t, sql16)
	db := env.Store.DB()
	for attrs, want := range map[string]string{
		"LOGIN":              "can log in",
		"NOLOGIN SUPERUSER":  "is a superuser",
		"NOLOGIN BYPASSRLS":  "has BYPASSRLS",
		"NOLOGIN CREATEROLE": "has CREATEROLE",
		"NOLOGIN":            "",
	} {
		name := "fs_rt_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
		_, err := db.ExecContext(ctx, `CREATE ROLE `+pq.QuoteIdentifier(name)+` `+attrs)
		require.NoError(t, err)
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, strings.ReplaceAll(sql16, "fleetsaga_worker", name))
		require.NoError(t, tx.Rollback())
		_, _ = db.ExecContext(ctx, `DROP ROLE `+pq.QuoteIdentifier(name))
		if want == "" {
			assert.NoError(t, err, attrs)
			continue
		}
		require.Error(t, err, attrs)
		assert.Contains(t, err.Error(), "role "+name+" exists and "+want, attrs)
	}
}
