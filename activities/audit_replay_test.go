package activities_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// One approver's SSH signature stored twice in a rollout's chain (an owner
// drops rollout_approval_replay_once and INSERTs a copy as "bob" with
// another reason) is one approver: the copy fails.
func TestAuditVerifyCountsOneSignatureOnce(t *testing.T) {
	alice := approvaltest.Key(t)
	b, err := os.ReadFile(approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice}))
	require.NoError(t, err)
	signers, err := approval.ParseAllowedSigners(b)
	require.NoError(t, err)
	gate := approval.Gate{Rollout: "prod", Stage: "all-sleds", PlanDigest: "d1", Decision: approval.DecisionApprove}
	st := approvaltest.Statement(t, gate, "canary healthy", time.Now())
	signed := approvaltest.Sign(t, st, alice)

	v := &ledger.AuditVerifier{CheckSignature: activities.CheckStoredApproval(signers, nil)}
	first := ledger.Approval{Rollout: "prod", Stage: "all-sleds", By: "ssh:alice", Reason: st.Reason, PlanDigest: "d1", At: time.Now().UTC().Truncate(time.Microsecond),
		Principal: "ssh:alice", Method: "ssh", KeyFingerprint: ssh.FingerprintSHA256(alice.PublicKey()), Signature: signed.SSHSig, Payload: signed.Payload,
		ReplayKey: st.Nonce, Seq: 1}
	first.Hash = ledger.ApprovalHash(first)
	require.NoError(t, v.Add(ledger.AuditRecord{Table: "rollout_approval", Approval: &first}), "the genuine approval")

	copied := first
	copied.Seq, copied.PrevHash = 2, first.Hash
	copied.By, copied.Reason = "bob", "four eyes: bob agrees"
	copied.Hash = ledger.ApprovalHash(copied)
	err = v.Add(ledger.AuditRecord{Table: "rollout_approval", Approval: &copied})
	require.Error(t, err, "the same signature, nonce and replay key a second time, as bob (%d signatures verified)", v.Signatures)
}
