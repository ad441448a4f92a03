package rollout_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Alice (one key) sends two approvals of the same gate. The
// first one's VerifyApproval is slow (here: its first attempts find the
// keyring file away, then an operator pauses it, as a slow OIDC provider
// or plain timing could hold it too), the second opens the gate and
// SpendGateApprovals records the gate's approvals spent. The first then
// arrives after the spend: it is refused (Spent), not recorded, so when
// the stage fails and the operator resets to before the gate, the gate
// stays closed: no leftover approval of the pass that ran opens it.
func TestLateApprovalOfAPassThatRanIsRefusedAndTheResetGateStaysClosed(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	alice := approvaltest.Key(t)
	signers := approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice})
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: signers})
	require.NoError(t, err)
	startRolloutWorkerWith(t, env, keyring)

	update := rollout.TestInput{Name: "late-" + env.TaskQueue, Take: 15 * time.Second, Fail: true}
	in := rollout.RolloutInput{Name: "late-approval-" + env.TaskQueue, Stages: []rollout.Stage{
		{Name: "one", Kind: rollout.KindTest, Concurrency: 1, Approval: true, Updates: rollout.TestUpdates(update)},
	}}
	id := rollout.RolloutWorkflowID(in.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, rollout.Rollout, in)
	require.NoError(t, err)
	send := func(gate *rollout.StagePlan, reason string, stage client.WorkflowUpdateStage) client.WorkflowUpdateHandle {
		s := approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, Run: gate.RunID, Stage: gate.Stage, PlanDigest: gate.Digest, Decision: approval.DecisionApprove},
			reason, time.Now()), alice)
		h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
			Args:         []any{workflows.Approval{By: "alice", Reason: reason, Stage: gate.Stage, PlanDigest: gate.Digest, Signed: &s}},
			WaitForStage: stage})
		require.NoError(t, err)
		return h
	}

	gate := awaitGate(ctx, t, env, id, "one")
	require.NoError(t, os.Rename(signers, signers+".away"))
	slow := send(gate, "first, slow", client.WorkflowUpdateStageAccepted)
	// Its attempts fail while the keyring is away; paused, it cannot
	// retry (and win) before the second opens the gate, however slow
	// the machine.
	var first string
	require.Eventually(t, func() bool {
		pa := testenv.PendingActivity(t, env.Client, id, "VerifyApproval")
		if pa == nil || pa.GetAttempt() < 2 {
			return false
		}
		first = pa.GetActivityId()
		return true
	}, 30*time.Second, 50*time.Millisecond, "the first approval's check never failed")
	testenv.PauseActivity(t, env.Client, id, first)
	require.NoError(t, os.Rename(signers+".away", signers))
	require.NoError(t, send(gate, "second", client.WorkflowUpdateStageCompleted).Get(ctx, nil))
	testenv.UnpauseActivity(t, env.Client, id, first)
	err = slow.Get(ctx, nil)
	require.Error(t, err, "the first arrived after the gate opened and spent its approvals")
	require.Contains(t, err.Error(), "opened", "refused as spent: %v", err)
	require.Error(t, run.Get(ctx, nil), "the stage's update fails and ends the rollout")

	reset := testenv.ResetWorkflow(t, env.Client, id, testenv.ResetFirst)
	requireGateStaysClosed(ctx, t, env, id, reset.GetRunID(), "the reset run passed its gate on alice's late approval of the pass that ran, with no new one")
}
