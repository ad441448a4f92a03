package ledger_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// An exposed mark cannot be taken back by the database's owner unseen:
// exposed_statement refuses DELETE and TRUNCATE; with its triggers
// disabled the chained mark still holds; the chained mark removed is a
// broken link for audit verify.
func TestAnExposedMarkCannotBeTakenBackUnseen(t *testing.T) {
	l := newSignedLedger(t)
	ctx := context.Background()
	const rollout, key = "fleetsaga/rollout/plan/exposed-mark", "exposed:3f2a"
	require.NoError(t, l.signing.RecordExposed(ctx, key, rollout, "start:run-1"))
	require.NoError(t, l.signing.RecordExposed(ctx, key, rollout, "start:run-1"), "a retry is a no-op")
	require.NoError(t, l.signing.RecordApproval(ctx, ledger.Approval{Rollout: rollout, Stage: "canary@run:run-1", By: "bob", Reason: "ok", Method: ledger.MethodUnsigned}))
	v, err := l.verify(nil)
	require.NoError(t, err, "verify understands the mark")
	require.Equal(t, 1, v.Exposed)
	marks, err := l.env.Store.Approvals(ctx, rollout)
	require.NoError(t, err)
	require.Len(t, marks, 2)

	for _, q := range []string{`DELETE FROM exposed_statement`, `TRUNCATE exposed_statement`, `UPDATE exposed_statement SET statement_key = 'x'`} {
		_, err := l.env.Store.DB().Exec(q)
		require.ErrorContains(t, err, "append-only", q)
	}
	l.sql(t, `ALTER TABLE exposed_statement DISABLE TRIGGER exposed_statement_no_change;
DELETE FROM exposed_statement;
ALTER TABLE exposed_statement ENABLE TRIGGER exposed_statement_no_change;`)
	exposed, err := l.env.Store.Exposed(ctx, key)
	require.NoError(t, err)
	require.True(t, exposed, "the chained mark holds")

	l.sql(t, `ALTER TABLE rollout_approval DISABLE TRIGGER rollout_approval_no_change;
DELETE FROM rollout_approval WHERE method = 'exposed';
ALTER TABLE rollout_approval ENABLE TRIGGER rollout_approval_no_change;`)
	exposed, err = l.env.Store.Exposed(ctx, key)
	require.NoError(t, err)
	require.False(t, exposed)
	_, err = l.verify(nil)
	require.Error(t, err, "the removed mark is named")
}
