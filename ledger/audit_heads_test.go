package ledger_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// Chains written before the worker had a key are signed when it starts
// (SignHeads); from then on a row appended without the key is named.
func TestSignHeadsCoversChainsWrittenBeforeTheKey(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	plain := env.Store
	a := intent("heads", "sp/sled/9", 1)
	require.NoError(t, plain.RecordIntent(ctx, a))
	for _, step := range []string{"intent", "start"} {
		require.NoError(t, plain.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: step}))
	}
	require.NoError(t, plain.RecordApproval(ctx, ledger.Approval{Rollout: "r", Stage: "canary", By: "bob", Reason: "ok", Method: ledger.MethodUnsigned}))

	verify := func() (*ledger.AuditVerifier, error) {
		v := &ledger.AuditVerifier{HeadKey: pub}
		if err := plain.ExportAudit(ctx, v.Add); err != nil {
			return v, err
		}
		return v, v.Finish()
	}
	_, err = verify()
	var changed *ledger.ChainChanged
	require.True(t, errors.As(err, &changed), "%v", err)
	require.Contains(t, err.Error(), "is named by a head the worker signed")

	signing := plain.WithHeadSigner(key)
	n, err := signing.SignHeads(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = signing.SignHeads(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a worker's next start signs nothing again")
	v, err := verify()
	require.NoError(t, err)
	require.Equal(t, 2, v.HeadChains)

	require.NoError(t, signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "wait"}))
	require.NoError(t, signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "wait"}), "a retried append signs the same head again, once")
	_, err = verify()
	require.NoError(t, err)

	require.NoError(t, plain.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "finish"}), "a writer without the key")
	_, err = verify()
	require.True(t, errors.As(err, &changed), "%v", err)
	require.Equal(t, "attempt "+a.ID.String(), changed.Chain)
}

// On a ledger that holds heads, a chain without one is not signed at
// start, only when the worker is told to vouch for it
// (--audit-sign-unheaded-chains).
func TestSignHeadsOnASignedLedgerSignsOnlyWhenTold(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signing := env.Store.WithHeadSigner(key)
	require.NoError(t, signing.RecordApproval(ctx, ledger.Approval{Rollout: "signed", Stage: "canary", By: "bob", Reason: "ok", Method: ledger.MethodUnsigned}))
	require.NoError(t, env.Store.RecordApproval(ctx, ledger.Approval{Rollout: "keyless", Stage: "canary", By: "bob", Reason: "ok", Method: ledger.MethodUnsigned}))

	n, err := signing.SignHeads(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "the ledger holds heads: a chain without one is not vouched for at start")
	verify := func() error {
		v := &ledger.AuditVerifier{HeadKey: pub}
		if err := env.Store.ExportAudit(ctx, v.Add); err != nil {
			return err
		}
		return v.Finish()
	}
	require.ErrorContains(t, verify(), "rollout_approval chain rollout keyless: none of its rows")

	n, err = signing.SignUnheadedChains(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoError(t, verify())
}
