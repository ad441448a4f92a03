package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// A rollout with an approval gate on a real Temporal server and a real
// ledger: the approval is recorded with who and why, and both stages ran.
// With FLEETSAGA_RECORD_HISTORIES=1 its history is saved for the replay test.
func TestRolloutOnRealServerRecordsApproval(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	startRolloutWorker(t, env)

	in := workflows.RolloutInput{Name: "integration", Stages: []workflows.Stage{
		{Name: "first", Kind: workflows.KindTest, Concurrency: 2, Updates: workflows.TestUpdates(workflows.TestInput{Name: "a", Take: time.Second}, workflows.TestInput{Name: "b", Take: time.Second})},
		{Name: "second", Kind: workflows.KindTest, Concurrency: 1, Approval: true, Updates: workflows.TestUpdates(workflows.TestInput{Name: "c", Take: time.Second})},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := workflows.RolloutWorkflowID(in.Name)
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, workflows.Rollout, in)
	require.NoError(t, err)

	var gate *workflows.StagePlan
	require.Eventually(t, func() bool {
		v, err := env.Client.QueryWorkflow(ctx, id, "", workflows.GatePlanQuery)
		return err == nil && v.Get(&gate) == nil && gate != nil && gate.Stage == "second"
	}, 30*time.Second, 200*time.Millisecond)
	h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
		Args:         []any{workflows.Approval{By: "alice", Reason: "first stage healthy", Stage: gate.Stage, PlanDigest: gate.Digest}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(ctx, nil))

	var res workflows.RolloutResult
	require.NoError(t, run.Get(ctx, &res))
	require.Len(t, res.Outcomes, 3)
	for _, o := range res.Outcomes {
		require.Equal(t, workflows.StateCompleted, o.State, o.Target)
	}
	approvals, err := env.Store.Approvals(ctx, id)
	require.NoError(t, err)
	require.Len(t, approvals, 1)
	require.Equal(t, "second", approvals[0].Stage)
	require.Equal(t, "alice", approvals[0].By)
	require.Equal(t, "first stage healthy", approvals[0].Reason)

	replay.Record(t, env.Client, id, run.GetRunID(), "testdata/histories/rollout-approval.json")
}

// startRolloutWorker runs a worker with the rollout and its stand-in update
// on the test's task queue until the test ends.
func startRolloutWorker(t *testing.T, env *testenv.Env) {
	t.Helper()
	w := worker.New(env.Client, env.TaskQueue, worker.Options{})
	w.RegisterWorkflow(workflows.Rollout)
	w.RegisterWorkflow(workflows.TestUpdate)
	w.RegisterActivity(&activities.RolloutActivities{Store: env.Store})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
}
