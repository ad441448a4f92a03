package rollout_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// A rollout with an approval gate on a real Temporal server and a real
// ledger, on a worker with no keyring: the unsigned approval is recorded
// with who and why, method "unsigned", and both stages ran.
// With FLEETSAGA_RECORD_HISTORIES=1 its history is saved for the replay test.
func TestRolloutOnRealServerRecordsApproval(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	startRolloutWorker(t, env)

	in := rollout.RolloutInput{Name: "integration", Stages: []rollout.Stage{
		{Name: "first", Kind: rollout.KindTest, Concurrency: 2, Updates: rollout.TestUpdates(rollout.TestInput{Name: "a", Take: time.Second}, rollout.TestInput{Name: "b", Take: time.Second})},
		{Name: "second", Kind: rollout.KindTest, Concurrency: 1, Approval: true, Updates: rollout.TestUpdates(rollout.TestInput{Name: "c", Take: time.Second})},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := rollout.RolloutWorkflowID(in.Name)
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, rollout.Rollout, in)
	require.NoError(t, err)

	var gate *rollout.StagePlan
	require.Eventually(t, func() bool {
		v, err := env.Client.QueryWorkflow(ctx, id, "", rollout.GatePlanQuery)
		return err == nil && v.Get(&gate) == nil && gate != nil && gate.Stage == "second"
	}, 30*time.Second, 200*time.Millisecond)
	h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
		Args:         []any{workflows.Approval{By: "alice", Reason: "first stage healthy", Stage: gate.Stage, PlanDigest: gate.Digest}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(ctx, nil))

	var res rollout.RolloutResult
	require.NoError(t, run.Get(ctx, &res))
	require.Len(t, res.Outcomes, 3)
	for _, o := range res.Outcomes {
		require.Equal(t, workflows.StateCompleted, o.State, o.Target)
	}
	approvals, err := env.Store.Approvals(ctx, id)
	require.NoError(t, err)
	require.Len(t, approvals, 1)
	require.Equal(t, "second", activities.StoredApprovalGate(approvals[0]).Stage)
	require.Equal(t, "alice", approvals[0].By)
	require.Equal(t, "first stage healthy", approvals[0].Reason)
	require.Equal(t, ledger.MethodUnsigned, approvals[0].Method)
	require.Empty(t, approvals[0].Principal, "nothing proved who approved")

	// rollout-approval-unsigned.json is this run recorded before the plan
	// digest bound the inputs (boundDigestVersion), kept for the runs
	// started before it; rollout-approval-bound.json is after it.
	replay.Record(t, env.Client, id, run.GetRunID(), "../testdata/histories/rollout-approval-bound.json")
}

// startRolloutWorker runs a worker with the rollout and its stand-in update
// on the test's task queue until the test ends.
func startRolloutWorker(t *testing.T, env *testenv.Env) {
	t.Helper()
	noKeyring, err := approval.LoadKeyring(approval.KeyringConfig{})
	require.NoError(t, err)
	startRolloutWorkerWith(t, env, noKeyring)
}

// startRolloutWorkerWith is startRolloutWorker whose approvals are
// checked against keyring.
func startRolloutWorkerWith(t *testing.T, env *testenv.Env, keyring *approval.Keyring) {
	t.Helper()
	w := worker.New(env.Client, env.TaskQueue, worker.Options{})
	w.RegisterWorkflow(rollout.Rollout)
	w.RegisterWorkflow(rollout.TestUpdate)
	w.RegisterActivity(&rollout.RolloutActivities{Store: env.Store, Temporal: env.Client}) // a reset run adopts its updates
	w.RegisterActivity(&activities.ApprovalActivities{Store: env.Store, Keyring: keyring})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
}

// A rollout cancelled while its updates run: it waits for them to
// compensate, ends cancelled and says so in its search attribute. With
// FLEETSAGA_RECORD_HISTORIES=1 its history is saved for the replay test.
func TestRolloutCancelOnRealServerWaitsAndEndsCancelled(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	startRolloutWorker(t, env)

	in := rollout.RolloutInput{Name: "cancelled-" + env.TaskQueue, Stages: []rollout.Stage{
		{Name: "first", Kind: rollout.KindTest, Concurrency: 2, Updates: rollout.TestUpdates(
			rollout.TestInput{Name: "a", Take: time.Hour, Compensate: time.Second},
			rollout.TestInput{Name: "b", Take: time.Hour, Compensate: time.Second},
			rollout.TestInput{Name: "c", Take: time.Second})},
		{Name: "second", Kind: rollout.KindTest, Concurrency: 1, Updates: rollout.TestUpdates(rollout.TestInput{Name: "d"})},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := rollout.RolloutWorkflowID(in.Name)
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, rollout.Rollout, in)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		v, err := env.Client.QueryWorkflow(ctx, id, "", workflows.ProgressQuery)
		var p workflows.Progress
		return err == nil && v.Get(&p) == nil && p.Counts["running"] == 2
	}, 30*time.Second, 100*time.Millisecond)
	require.NoError(t, env.Client.CancelWorkflow(ctx, id, ""))
	err = run.Get(ctx, nil)
	var ce *temporal.CanceledError
	require.ErrorAs(t, err, &ce)

	for _, child := range []string{"test/a", "test/b"} {
		cd, err := env.Client.DescribeWorkflowExecution(ctx, workflows.WorkflowID(rollout.KindTest, child), "")
		require.NoError(t, err)
		assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, cd.GetWorkflowExecutionInfo().GetStatus(), "%s ended before its parent", child)
	}
	desc, err := env.Client.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	sa := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	require.Contains(t, string(sa[workflows.SAState.GetName()].GetData()), string(workflows.StateCancelled))
	replay.Record(t, env.Client, id, run.GetRunID(), "../testdata/histories/rollout-cancel.json")
}
