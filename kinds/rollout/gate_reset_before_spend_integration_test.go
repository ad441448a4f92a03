package rollout_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Alice's approval opens a gate, SpendGateApprovals records it
// spent, the stage fails and the rollout ends. The operator resets to the
// workflow task that scheduled SpendGateApprovals (the one that handled
// VerifyApproval's result: before the spend, before the gate let the
// stage start). That task runs again in the reset run: its
// SpendGateApprovals finds the pass spent by the run before (Spent), so
// the gate clears its approvers and stays closed until a new approval.
func TestResetToBeforeTheSpendKeepsTheGateClosedOnSpentApprovals(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	alice := approvaltest.Key(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice})})
	require.NoError(t, err)
	startRolloutWorkerWith(t, env, keyring)

	update := rollout.TestInput{Name: "respend-" + env.TaskQueue, Take: time.Second, Fail: true}
	in := rollout.RolloutInput{Name: "reset-before-spend-" + env.TaskQueue, Stages: []rollout.Stage{
		{Name: "one", Kind: rollout.KindTest, Concurrency: 1, Approval: true, Updates: rollout.TestUpdates(update)},
	}}
	id := rollout.RolloutWorkflowID(in.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, rollout.Rollout, in)
	require.NoError(t, err)
	gate := awaitGate(ctx, t, env, id, "one")
	s := approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, Run: gate.RunID, Stage: gate.Stage, PlanDigest: gate.Digest, Decision: approval.DecisionApprove},
		"reviewed", time.Now()), alice)
	h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
		Args:         []any{workflows.Approval{By: "alice", Reason: "reviewed", Stage: gate.Stage, PlanDigest: gate.Digest, Signed: &s}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(ctx, nil))
	require.Error(t, run.Get(ctx, nil), "the stage's update fails and ends the rollout")

	// The workflow task that scheduled SpendGateApprovals.
	var at int64
	iter := env.Client.GetWorkflowHistory(ctx, id, run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "SpendGateApprovals" {
			at = a.GetWorkflowTaskCompletedEventId()
		}
	}
	require.NotZero(t, at)
	resp, err := env.Client.WorkflowService().ResetWorkflowExecution(ctx, &workflowservice.ResetWorkflowExecutionRequest{
		Namespace: env.Namespace, WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: run.GetRunID()},
		Reason: "reset to the task before the spend", WorkflowTaskFinishEventId: at, RequestId: uuid.NewString(),
	})
	require.NoError(t, err)
	requireGateStaysClosed(ctx, t, env, id, resp.GetRunId(), "the reset run passed the gate on alice's spent approval and ran its stage again")

	// The gate waits for a new approval, and opens on it.
	gate = awaitGate(ctx, t, env, id, "one")
	s = approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, Run: gate.RunID, Stage: gate.Stage, PlanDigest: gate.Digest, Decision: approval.DecisionApprove},
		"reviewed again", time.Now()), alice)
	h, err = env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, RunID: resp.GetRunId(), UpdateName: workflows.ApproveUpdate,
		Args:         []any{workflows.Approval{By: "alice", Reason: "reviewed again", Stage: gate.Stage, PlanDigest: gate.Digest, Signed: &s}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(ctx, nil), "a new approval counts in the reset run")
	require.Error(t, env.Client.GetWorkflow(ctx, id, resp.GetRunId()).Get(ctx, nil), "the gate opened: the stage ran (and its update failed again)")
}

// requireGateStaysClosed waits 3*gateClosedFor and requires the run still
// open: its gate held (a stage that ran would have failed and ended it).
func requireGateStaysClosed(ctx context.Context, t *testing.T, env *testenv.Env, id, runID, msg string) {
	t.Helper()
	wait, stop := context.WithTimeout(ctx, 3*gateClosedFor)
	defer stop()
	err := env.Client.GetWorkflow(ctx, id, runID).Get(wait, nil)
	<-wait.Done() // a long poll cut short still waits the whole time
	d, derr := env.Client.DescribeWorkflowExecution(ctx, id, runID)
	require.NoError(t, derr)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus(), "%s: %v", msg, err)
}
