package rollout_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// gateClosedFor is how long the reset run's gate must stay closed: the
// reset re-applies alice's approve update at once, and the recorded
// approvals are read before the gate shows its plan, so a gate that
// opens on them does so within a few workflow tasks.
const gateClosedFor = 5 * time.Second

// Alice approves a gate, its stage fails and the rollout ends; an
// operator resets it to its first workflow task, before the gate. Her
// approval approved the pass that ran: neither the ledger's record of it
// nor the update the reset re-applies opens the gate again, which says it
// needs one more approval until she approves anew.
func TestRolloutResetAfterItsStageFailedNeedsANewApproval(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	alice := approvaltest.Key(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice})})
	require.NoError(t, err)
	startRolloutWorkerWith(t, env, keyring)

	update := rollout.TestInput{Name: "spent-" + env.TaskQueue, Take: time.Second, Fail: true}
	in := rollout.RolloutInput{Name: "reset-spent-" + env.TaskQueue, Stages: []rollout.Stage{
		{Name: "one", Kind: rollout.KindTest, Concurrency: 1, Approval: true, Updates: rollout.TestUpdates(update)},
	}}
	id := rollout.RolloutWorkflowID(in.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, rollout.Rollout, in)
	require.NoError(t, err)
	approve := func(gate *rollout.StagePlan) {
		s := approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, Run: gate.RunID, Stage: gate.Stage, PlanDigest: gate.Digest, Decision: approval.DecisionApprove},
			"reviewed", time.Now()), alice)
		h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
			Args:         []any{workflows.Approval{By: "alice", Reason: "reviewed", Stage: gate.Stage, PlanDigest: gate.Digest, Signed: &s}},
			WaitForStage: client.WorkflowUpdateStageCompleted})
		require.NoError(t, err)
		require.NoError(t, h.Get(ctx, nil))
	}

	approve(awaitGate(ctx, t, env, id, "one"))
	require.Error(t, run.Get(ctx, nil), "the stage's update fails and ends the rollout")
	require.Equal(t, 1, countRuns(ctx, t, env, workflows.WorkflowID(rollout.KindTest, update.Target())))

	reset := testenv.ResetWorkflow(t, env.Client, id, testenv.ResetFirst)
	gate := awaitGate(ctx, t, env, id, "one")
	deadline := time.Now().Add(gateClosedFor)
	for time.Now().Before(deadline) {
		now := gateNow(ctx, t, env, id)
		require.NotNil(t, now, "the gate opened on the approval of the pass that failed")
		require.Equal(t, "1 more approval", now.StillNeeded)
		time.Sleep(200 * time.Millisecond)
	}

	approve(gate)
	require.Error(t, reset.Get(ctx, nil), "a new approval opens the gate, and the stage (adopting its failed update) fails again")
	replay.Record(t, env.Client, id, reset.GetRunID(), "../testdata/histories/rollout-reset-spent-gate.json")
}
