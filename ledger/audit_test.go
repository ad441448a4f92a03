package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// The audit chain holds on an untouched ledger, and an edit made with SQL
// by someone who may disable the append-only trigger (a database
// administrator) is named as the first broken link.
func TestAuditChainNamesTheRowEditedWithSQL(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	s := env.Store
	update := "audit-" + uuid.NewString()[:8]
	a := intent(update, "sp/sled/"+uuid.NewString()[:8], 1)
	require.NoError(t, s.RecordIntent(ctx, a))
	for i := range 4 {
		require.NoError(t, s.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: fmt.Sprintf("step-%d", i), Message: "ok", Worker: "w1"}))
	}
	require.NoError(t, s.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "step-1", Message: "again"}), "a repeated step is kept once")
	rollout := "fleetsaga/rollout/plan/" + update
	for _, by := range []string{"alice", "bob"} {
		require.NoError(t, s.RecordApproval(ctx, ledger.Approval{Rollout: rollout, Stage: "canary", By: by, Reason: "reviewed",
			PlanDigest: "abc", Principal: by, Method: "ssh", KeyFingerprint: "SHA256:" + by, Signature: "sig-" + by,
			Payload: `{"nonce":"` + by + `"}`, ReplayKey: "nonce-" + update + by}))
	}

	events, err := s.Events(ctx, a.ID)
	require.NoError(t, err)
	require.Len(t, events, 4)
	require.Equal(t, "", events[0].PrevHash)
	for i, e := range events {
		require.Equal(t, ledger.EventHash(e), e.Hash, "the database and the offline check agree on event %d", i)
		if i > 0 {
			require.Equal(t, events[i-1].Hash, e.PrevHash)
		}
	}
	approvals, err := s.Approvals(ctx, rollout)
	require.NoError(t, err)
	require.Len(t, approvals, 2)
	require.Equal(t, approvals[0].Hash, approvals[1].PrevHash)
	require.Equal(t, "SHA256:bob", approvals[1].KeyFingerprint)
	require.Equal(t, "sig-bob", approvals[1].Signature)

	var signatures []string
	v, err := s.VerifyAudit(ctx, func(ap ledger.Approval) error { signatures = append(signatures, ap.By); return nil })
	require.NoError(t, err, "an untouched ledger verifies")
	require.GreaterOrEqual(t, v.Records, 6)
	require.Subset(t, signatures, []string{"alice", "bob"})

	// The append-only triggers stop an application, not an administrator.
	_, err = s.DB().Exec(`UPDATE update_event SET message = 'edited' WHERE seq = $1`, events[2].Seq)
	require.ErrorContains(t, err, "append-only")
	env.AdminEdit("update_event", `UPDATE update_event SET message = 'all fine' WHERE seq = $1`, events[1].Seq)

	_, err = s.VerifyAudit(ctx, nil)
	var broken *ledger.BrokenLink
	require.True(t, errors.As(err, &broken), "%v", err)
	require.Equal(t, "update_event", broken.Table)
	require.Equal(t, events[1].Seq, broken.Seq, "the edited row is the first broken link")
	require.Equal(t, "attempt "+a.ID.String(), broken.Chain)
	require.Contains(t, broken.Error(), "the row was edited")
}

func TestAuditChainNamesAnEditedApproval(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	s := env.Store
	rollout := "fleetsaga/rollout/plan/" + uuid.NewString()[:8]
	for _, by := range []string{"alice", "bob"} {
		require.NoError(t, s.RecordApproval(ctx, ledger.Approval{Rollout: rollout, Stage: "canary", By: by, Reason: "reviewed",
			Principal: by, Method: "ssh", ReplayKey: rollout + by}))
	}
	approvals, err := s.Approvals(ctx, rollout)
	require.NoError(t, err)
	env.AdminEdit("rollout_approval", `UPDATE rollout_approval SET approved_by = 'carol', principal = 'carol' WHERE seq = $1`, approvals[0].Seq)
	_, err = s.VerifyAudit(ctx, nil)
	var broken *ledger.BrokenLink
	require.True(t, errors.As(err, &broken), "%v", err)
	require.Equal(t, "rollout_approval", broken.Table)
	require.Equal(t, approvals[0].Seq, broken.Seq)
}

// A replay key is used once; the same approver's second approval of a
// gate is kept once.
func TestApprovalReplayKeyIsUsedOnce(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	s := env.Store
	rollout := "fleetsaga/rollout/plan/" + uuid.NewString()[:8]
	key := "nonce-" + rollout
	ap := ledger.Approval{Rollout: rollout, Stage: "canary", By: "alice", Reason: "ok", Principal: "alice", Method: "ssh", ReplayKey: key}
	require.NoError(t, s.RecordApproval(ctx, ap))
	require.NoError(t, s.RecordApproval(ctx, ap), "a retried write is a no-op")
	other := ap
	other.Stage = "rest"
	require.ErrorIs(t, s.RecordApproval(ctx, other), ledger.ErrReplayed)
	got, err := s.ApprovalByReplayKey(ctx, key)
	require.NoError(t, err)
	require.Equal(t, "canary", got.Stage)
	all, err := s.Approvals(ctx, rollout)
	require.NoError(t, err)
	require.Len(t, all, 1, "the refused replay changed nothing")
}

// Rows written before the chain existed are chained by its migration, in
// order, and new rows chain onto them.
func TestAuditMigrationChainsEarlierRows(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	db := env.Store.DB()
	// The database as a build before the chain left it.
	_, err := db.Exec(`DROP SCHEMA public CASCADE; CREATE SCHEMA public;
		CREATE TABLE schema_migration (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
	require.NoError(t, err)
	all, err := ledger.Migrations()
	require.NoError(t, err)
	const chain = 9
	for _, m := range all {
		if m.Version < chain {
			_, err := db.Exec(m.SQL)
			require.NoError(t, err, m.Name)
			_, err = db.Exec(`INSERT INTO schema_migration (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			require.NoError(t, err)
		}
	}
	a := intent("before-chain", "sp/sled/3", 1)
	require.NoError(t, env.Store.RecordIntent(ctx, a))
	for _, step := range []string{"intent", "start", "wait"} {
		_, err := db.Exec(`INSERT INTO update_event (attempt_id, step, worker) VALUES ($1, $2, 'old-worker')`, a.ID, step)
		require.NoError(t, err)
	}
	_, err = db.Exec(`INSERT INTO rollout_approval (rollout_id, stage, approved_by, reason) VALUES ('r', 'canary', 'alice', 'ok'), ('r', 'rest', 'bob', 'ok')`)
	require.NoError(t, err)

	applied, err := env.Store.Migrate(ctx)
	require.NoError(t, err)
	require.Contains(t, applied, chain)
	require.NoError(t, env.Store.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "finish"}))
	events, err := env.Store.Events(ctx, a.ID)
	require.NoError(t, err)
	require.Len(t, events, 4)
	require.Equal(t, events[2].Hash, events[3].PrevHash, "a new event chains onto the migrated ones")
	v, err := env.Store.VerifyAudit(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, 6, v.Records)
	require.Equal(t, 2, v.Chains)
}

// An approver who approved a gate's plan approves it again once the gate
// shows a new plan: both approvals are rows, the second not dropped as a
// duplicate of the first.
func TestApprovalOfANewPlanBySameApproverIsRecorded(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	s := env.Store
	rollout := "fleetsaga/rollout/plan/" + uuid.NewString()[:8]
	first := ledger.Approval{Rollout: rollout, Stage: "canary@run:r1", By: "ssh:alice", Reason: "ok", PlanDigest: "d1",
		Principal: "ssh:alice", Method: "ssh", Payload: `{"nonce":"n1"}`, ReplayKey: "n1-" + rollout}
	require.NoError(t, s.RecordApproval(ctx, first))
	second := first
	second.PlanDigest, second.Payload, second.ReplayKey = "d2", `{"nonce":"n2"}`, "n2-"+rollout
	require.NoError(t, s.RecordApproval(ctx, second))
	all, err := s.Approvals(ctx, rollout)
	require.NoError(t, err)
	require.Len(t, all, 2, "the approval of the new plan is in the ledger")
	require.Equal(t, []string{"d1", "d2"}, []string{all[0].PlanDigest, all[1].PlanDigest})

	unsigned := ledger.Approval{Rollout: rollout, Stage: "rest", By: "bob", Reason: "ok", PlanDigest: "d1", Method: ledger.MethodUnsigned}
	require.NoError(t, s.RecordApproval(ctx, unsigned))
	require.NoError(t, s.RecordApproval(ctx, unsigned), "a retried unsigned write is a no-op")
	unsigned.PlanDigest = "d2"
	require.NoError(t, s.RecordApproval(ctx, unsigned))
	all, err = s.Approvals(ctx, rollout)
	require.NoError(t, err)
	require.Len(t, all, 4)
}
