package testenv

import "github.com/stretchr/testify/require"

// AdminEdit changes ledger rows as a database administrator can: the
// table's append-only trigger (<table>_no_change) off, the statement, the
// trigger on, in one transaction. Tests of the audit chain use it to show
// that such an edit is found.
func (e *Env) AdminEdit(table, statement string, args ...any) {
	t := e.T
	t.Helper()
	tx, err := e.Store.DB().Begin()
	require.NoError(t, err)
	defer tx.Rollback() //nolint:errcheck
	_, err = tx.Exec(`ALTER TABLE ` + table + ` DISABLE TRIGGER ` + table + `_no_change`)
	require.NoError(t, err)
	res, err := tx.Exec(statement, args...)
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.Positive(t, n, "the edit changed no row")
	_, err = tx.Exec(`ALTER TABLE ` + table + ` ENABLE TRIGGER ` + table + `_no_change`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
}
