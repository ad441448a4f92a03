package testenv

import (
	"context"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// WorkerRoleURL is the test's database as a login role of its own that
// holds fleetsaga_worker and nothing else, as a production worker connects
// (docs/DEPLOYING.md, "The ledger's roles"); the role is dropped when the
// test ends. Its password is random (a server with trust auth ignores it).
// The test's database is set up as DEPLOYING's SQL sets up the ledger's:
// PUBLIC loses CONNECT and TEMPORARY, and the login is granted CONNECT
// (a test of an upgraded fleet that kept TEMPORARY grants it back:
// GrantTemporary).
func (e *Env) WorkerRoleURL() string {
	t := e.T
	t.Helper()
	name := "fs_worker_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	password := uuid.NewString()
	db := e.Store.DB()
	_, err := db.Exec(`CREATE ROLE ` + pq.QuoteIdentifier(name) + ` LOGIN PASSWORD ` + pq.QuoteLiteral(password) +
		` IN ROLE fleetsaga_worker`)
	require.NoError(t, err)
	dbname := e.databaseName()
	_, err = db.Exec(`REVOKE CONNECT, TEMPORARY ON DATABASE ` + dbname + ` FROM PUBLIC`)
	require.NoError(t, err)
	_, err = db.Exec(`GRANT CONNECT ON DATABASE ` + dbname + ` TO ` + pq.QuoteIdentifier(name))
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = db.ExecContext(context.Background(), `REVOKE ALL ON DATABASE `+dbname+` FROM `+pq.QuoteIdentifier(name))
		_, _ = db.ExecContext(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, name)
		_, _ = db.ExecContext(context.Background(), `DROP ROLE IF EXISTS `+pq.QuoteIdentifier(name))
	})
	require.NoError(t, ledger.CheckURL(e.DatabaseURL))
	u, err := url.Parse(e.DatabaseURL)
	require.NoError(t, err)
	u.User = url.UserPassword(name, password)
	return u.String()
}

// WorkerRoleStore is the test's ledger opened as WorkerRoleURL, closed when
// the test ends.
func (e *Env) WorkerRoleStore() *ledger.Store {
	e.T.Helper()
	s, err := ledger.Open(context.Background(), e.WorkerRoleURL())
	require.NoError(e.T, err)
	e.T.Cleanup(func() { _ = s.Close() })
	return s
}

// GrantTemporary gives fleetsaga_worker TEMPORARY on the test's database,
// as PostgreSQL gives it to PUBLIC by default: a ledger set up before
// DEPLOYING's REVOKE (an upgraded fleet) is so.
func (e *Env) GrantTemporary() {
	e.T.Helper()
	_, err := e.Store.DB().Exec(`GRANT TEMPORARY ON DATABASE ` + e.databaseName() + ` TO fleetsaga_worker`)
	require.NoError(e.T, err)
}

// databaseName is the test's database, quoted.
func (e *Env) databaseName() string {
	e.T.Helper()
	var name string
	require.NoError(e.T, e.Store.DB().QueryRow(`SELECT current_database()`).Scan(&name))
	return pq.QuoteIdentifier(name)
}
