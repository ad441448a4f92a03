package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// starter audit verify passes on an untouched ledger (offline too, from an
// export) and, after a row is edited with SQL, exits 1 naming the first
// broken link; an edit that recomputes its own hash is caught by the
// signature it no longer matches.
func TestAuditVerifyNamesTheFirstBrokenLink(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	s := env.Store
	a := ledger.Attempt{ID: uuid.New(), UpdateID: "u1", Attempt: 1, Kind: "sp-firmware", Target: "sp/sled/1", WorkflowID: "u1", RunID: "r"}
	require.NoError(t, s.RecordIntent(ctx, a))
	for _, step := range []string{"intent", "start", "wait", "finish"} {
		require.NoError(t, s.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: step, Worker: "w"}))
	}
	key := approvaltest.Key(t)
	rollout, digest := "fleetsaga/rollout/plan/q3", strings.Repeat("ab", 32)
	st := approvaltest.Statement(t, approval.Gate{Rollout: rollout, Stage: "canary", PlanDigest: digest, Decision: approval.DecisionApprove}, "canary healthy", time.Now())
	signed := approvaltest.Sign(t, st, key)
	fp := ssh.FingerprintSHA256(key.PublicKey())
	require.NoError(t, s.RecordApproval(ctx, ledger.Approval{Rollout: rollout, Stage: "canary", By: "alice", Reason: st.Reason,
		PlanDigest: digest, Principal: "alice", Method: "ssh", KeyFingerprint: fp, Signature: signed.SSHSig, Payload: signed.Payload, ReplayKey: st.Nonce}))
	signers := approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": key})
	db := []string{"DATABASE_URL=" + env.DatabaseURL}

	r := runStarter(t, db, "audit", "verify", "--allowed-signers", signers)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "audit trail intact: 5 rows in 2 chains, 1 signatures verified")

	r = runStarter(t, db, "audit", "export")
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, strings.Split(strings.TrimSpace(r.stdout), "\n"), 5)
	export := filepath.Join(t.TempDir(), "ledger.jsonl")
	require.NoError(t, os.WriteFile(export, []byte(r.stdout), 0o600))
	r = runStarter(t, nil, "audit", "verify", "--from", export, "--allowed-signers", signers)
	require.Equal(t, 0, r.code, "offline, from the export: %s", r.stderr)

	// An administrator rewrites the approval's reason and recomputes its
	// hash: the chain holds, the signature does not.
	env.AdminEdit("rollout_approval", `UPDATE rollout_approval SET reason = 'rubber stamp',
		payload = replace(payload, 'canary healthy', 'rubber stamp') WHERE rollout_id = $1`, rollout)
	env.AdminEdit("rollout_approval", `UPDATE rollout_approval SET hash = rollout_approval_hash(rollout_approval) WHERE rollout_id = $1`, rollout)
	r = runStarter(t, db, "audit", "verify")
	require.Equal(t, exitFailed, r.code, r.stdout)
	require.Contains(t, r.stderr, "rollout_approval")
	require.Contains(t, r.stderr, "does not verify")

	// An event edited with SQL is named, seq and attempt, before it.
	events, err := s.Events(ctx, a.ID)
	require.NoError(t, err)
	env.AdminEdit("update_event", `UPDATE update_event SET worker = 'someone else' WHERE seq = $1`, events[1].Seq)
	r = runStarter(t, db, "audit", "verify")
	require.Equal(t, exitFailed, r.code, r.stdout)
	require.Contains(t, r.stderr, fmt.Sprintf("audit chain broken at update_event seq %d (attempt %s): its content does not match its hash", events[1].Seq, a.ID))
	r = runStarter(t, nil, "audit", "verify", "--from", export, "--allowed-signers", signers)
	require.Equal(t, 0, r.code, "the export taken before the edit still verifies: %s", r.stderr)
}
