package ledger_test

// Red team 3: attacks on the fixes for red team 2. Each test
// asserts the protection; a failing one is an attack that works.

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// RecordExposed writes the chained mark (method 'exposed') only when no
// rollout_approval row at all holds the statement's exposed key as its
// replay key (ledger/exposed.go: "a signed approval chose this key as its
// nonce (the mark in exposed_statement stands)"). An SSH statement's
// nonce is free text (approval/verify.go: any non-empty nonce is the
// replay key), so an approver who signs any gate's approval with nonce
// "exposed:<digest of P>" makes the worker record P's exposure in
// exposed_statement only. That table is append-only by trigger, which its
// owner disables: the mark is deleted, Exposed says false (so a resealed
// copy of P's plain-text token counts again), and audit verify
// --audit-public-key --against an export taken after the mark calls the
// ledger intact. Not the admitted gap (docs/GAPS.md: the chained mark
// deleted with its head while it is its chain's newest, before any export).
func TestAnSSHNonceEqualToTheExposedKeySuppressesTheChainedMark(t *testing.T) {
	l := newSignedLedger(t)
	ctx := context.Background()
	const key = "exposed:9b1c0d5e7f" // approval.ExposedKey(P) for a statement P not yet exposed
	const other, victim = "fleetsaga/rollout/plan/rt3-other", "fleetsaga/rollout/plan/rt3-victim"

	// the approver's real, verified SSH approval of another rollout's gate,
	// recorded by the worker (chained, signed head) with its nonce as replay key
	payload := fmt.Sprintf(`{"rollout":%q,"stage":"canary","nonce":%q}`, other, key)
	require.NoError(t, l.signing.RecordApproval(ctx, ledger.Approval{Rollout: other, Stage: "canary@run:run-1", By: "mallory", Reason: "ok",
		Principal: "mallory", Method: "ssh", KeyFingerprint: "SHA256:mallory", Signature: "-----BEGIN SSH SIGNATURE-----", Payload: payload, ReplayKey: key}))

	// P's ID token arrives in plain text: the worker marks P exposed
	require.NoError(t, l.signing.RecordExposed(ctx, key, victim, "start:run-2"))
	exposed, err := l.env.Store.Exposed(ctx, key)
	require.NoError(t, err)
	require.True(t, exposed)

	trusting := func(against *ledger.EarlierExport) error {
		v := &ledger.AuditVerifier{HeadKey: l.pub, Against: against,
			CheckSignature: func(a ledger.Approval) error { return nil }} // mallory's key is a trusted approver's
		if err := l.env.Store.ExportAudit(ctx, v.Add); err != nil {
			return err
		}
		return v.Finish()
	}
	require.NoError(t, trusting(nil))
	earlier := l.export(t) // an export taken after the mark

	l.sql(t, `ALTER TABLE exposed_statement DISABLE TRIGGER exposed_statement_no_change;
DELETE FROM exposed_statement;
ALTER TABLE exposed_statement ENABLE TRIGGER exposed_statement_no_change;`)
	exposed, err = l.env.Store.Exposed(ctx, key)
	require.NoError(t, err)
	verr := trusting(earlier)
	require.True(t, exposed || verr != nil,
		"the exposed mark was taken back and audit verify --audit-public-key --against (an export after the mark) calls the ledger intact")
}
