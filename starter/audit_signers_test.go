package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// signedRow is a real SSH approval by key for a gate of rollout, as the
// worker records it.
func signedRow(t *testing.T, rollout string, key ssh.Signer, principal string) ledger.Approval {
	t.Helper()
	digest := strings.Repeat("cd", 32)
	st := approvaltest.Statement(t, approval.Gate{Rollout: rollout, Stage: "canary", PlanDigest: digest, Decision: approval.DecisionApprove}, "canary healthy", time.Now())
	signed := approvaltest.Sign(t, st, key)
	return ledger.Approval{Rollout: rollout, Stage: "canary", By: principal, Reason: st.Reason, PlanDigest: digest, Principal: principal,
		Method: "ssh", KeyFingerprint: ssh.FingerprintSHA256(key.PublicKey()), Signature: signed.SSHSig, Payload: signed.Payload, ReplayKey: st.Nonce}
}

// An owner of the database writes approval rows with SQL that carry a
// real signature but claim something the signature does not say: verify
// names the row and what is wrong, with the keyring given.
func TestAuditVerifyChecksWhoSignedAndHow(t *testing.T) {
	alice, bob := approvaltest.Key(t), approvaltest.Key(t)
	signers := approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice, "bob": bob})
	const rollout = "fleetsaga/rollout/plan/q4"
	for _, tc := range []struct {
		name string
		edit func(*ledger.Approval)
		want string
	}{
		{"principal not the key's", func(a *ledger.Approval) { a.Principal, a.By = "ssh:bob", "ssh:bob" },
			`recorded as principal "ssh:bob", but the key ` + ssh.FingerprintSHA256(alice.PublicKey()) + ` is allowed signer alice's`},
		{"unknown method", func(a *ledger.Approval) { a.Method = "hmac" }, `unknown method "hmac"`},
		{"replay key not the nonce", func(a *ledger.Approval) { a.ReplayKey = "forged-" + a.ReplayKey }, "replay key forged-"},
		{"approver not the principal", func(a *ledger.Approval) { a.By = "bob" }, `recorded as approved by "bob", but signed by principal "ssh:alice"`},
		{"reason not the signed one", func(a *ledger.Approval) { a.Reason = "four eyes" }, `recorded reason "four eyes" is not the signed statement's`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testenv.New(t)
			row := signedRow(t, rollout, alice, "ssh:alice")
			tc.edit(&row)
			require.NoError(t, env.Store.RecordApproval(context.Background(), row), "the owner's INSERT")
			r := runStarter(t, []string{"DATABASE_URL=" + env.DatabaseURL}, "audit", "verify", "--allowed-signers", signers)
			require.Equal(t, exitFailed, r.code, r.stdout)
			require.Contains(t, r.stderr, "audit chain broken at rollout_approval seq")
			require.Contains(t, r.stderr, "(rollout "+rollout+")")
			require.Contains(t, r.stderr, tc.want)
		})
	}

	t.Run("a legacy bare principal and an identity pass", func(t *testing.T) {
		env := testenv.New(t)
		require.NoError(t, env.Store.RecordApproval(context.Background(), signedRow(t, rollout, alice, "alice")))
		require.NoError(t, env.Store.RecordApproval(context.Background(), signedRow(t, rollout+"-2", bob, "ssh:bob")))
		r := runStarter(t, []string{"DATABASE_URL=" + env.DatabaseURL}, "audit", "verify", "--allowed-signers", signers)
		require.Equal(t, exitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, "2 signatures verified")
	})
}

// Without a keyring a signature proves only that someone holds some key:
// verify says it checked none, and exits 1 unless told --skip-signatures.
func TestAuditVerifyWithoutKeyringSaysSignaturesWereNotChecked(t *testing.T) {
	env := testenv.New(t)
	mallory := approvaltest.Key(t)
	require.NoError(t, env.Store.RecordApproval(context.Background(), signedRow(t, "fleetsaga/rollout/plan/q4", mallory, "ssh:alice")))
	db := []string{"DATABASE_URL=" + env.DatabaseURL, "FLEETSAGA_APPROVAL_ALLOWED_SIGNERS="}
	r := runStarter(t, db, "audit", "verify")
	require.Equal(t, exitFailed, r.code, r.stdout)
	require.Contains(t, r.stderr, "signatures were NOT checked: no --allowed-signers")
	require.Contains(t, r.stderr, "1 signed approvals")

	r = runStarter(t, db, "audit", "verify", "--skip-signatures")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "hash chains intact: 1 rows in 1 chains; signatures NOT checked (--skip-signatures): 1 signed approvals unverified")
}

// An unsigned approval is one the keyring cannot check: with
// --allowed-signers it fails, unless --allow-unsigned accepts it (and the
// report says so).
func TestAuditVerifyWithAKeyringFailsUnsignedApprovals(t *testing.T) {
	env := testenv.New(t)
	signers := approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": approvaltest.Key(t)})
	require.NoError(t, env.Store.RecordApproval(context.Background(), ledger.Approval{Rollout: "r", Stage: "canary", By: "bob", Reason: "ok", Method: ledger.MethodUnsigned}))
	db := []string{"DATABASE_URL=" + env.DatabaseURL}
	r := runStarter(t, db, "audit", "verify", "--allowed-signers", signers)
	require.Equal(t, exitFailed, r.code, r.stdout)
	require.Contains(t, r.stderr, `an unsigned approval (by "bob", as typed)`)
	require.Contains(t, r.stderr, "--allow-unsigned")

	r = runStarter(t, db, "audit", "verify", "--allowed-signers", signers, "--allow-unsigned")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "1 unsigned approvals (a worker without a keyring took them): who approved is as typed (accepted: --allow-unsigned)")
}
