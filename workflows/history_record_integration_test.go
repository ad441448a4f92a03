package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// An agent install (one server failing), one of its per-server children
// and a drift check with repair, on the real stack. With
// FLEETSAGA_RECORD_HISTORIES=1 their histories are saved for the replay
// test.
func TestAgentWorkflowsOnFleetsimRecordHistories(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	d := spec.GenerateDatacenter(4, 31)
	s := newAgentStack(t, d, 1000)
	s.arm(t, faults.Fault{Kind: faults.TaskFailure, Target: "server/" + d.Servers[2].UUID.String(), Times: 1})
	s.worker()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	in := workflows.AgentInstallInput{Agents: []activities.AgentRequest{{Name: "firewaller"}},
		Selection: activities.ServerSelection{All: true}, Concurrency: 2, MaxFailures: 1, PollInterval: time.Second}
	run := s.start(t, ctx, in)
	var res workflows.AgentInstallResult
	require.NoError(t, run.Get(ctx, &res))
	assert.Equal(t, workflows.AgentRolloutWithFailures, res.Outcome)
	assert.Equal(t, 3, res.Installed)
	assert.Equal(t, 1, res.Failed)
	replay.Record(t, s.env.Client, run.GetID(), run.GetRunID(), "testdata/histories/agent-install-one-failed.json")
	child := run.GetID() + "/" + res.RolloutID.String() + "/" + d.Servers[2].UUID.String()
	replay.Record(t, s.env.Client, child, "", "testdata/histories/agent-install-server-failed.json")
	installed := run.GetID() + "/" + res.RolloutID.String() + "/" + d.Servers[0].UUID.String()
	replay.Record(t, s.env.Client, installed, "", "testdata/histories/agent-install-server-installed.json")

	// Drift: one server's intent is ahead of its actual image.
	sapi, err := triton.NewSAPI(s.sim.URL + "/sapi")
	require.NoError(t, err)
	img, _ := d.ImageFor("vm-agent", spec.GeneratedNewVersion)
	_, err = sapi.SetInstanceImage(ctx, d.Servers[0].Agents[3].UUID, d.Servers[0].UUID, img.UUID)
	require.NoError(t, err)
	din := workflows.AgentDriftInput{Agents: []string{"vm-agent"}, Selection: activities.ServerSelection{All: true},
		Repair: true, PollInterval: time.Second}
	drun, err := s.env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.WorkflowID(workflows.KindAgentDrift, din.Target()), TaskQueue: s.env.TaskQueue,
	}, workflows.AgentDriftCheck, din)
	require.NoError(t, err)
	var dres workflows.AgentDriftResult
	require.NoError(t, drun.Get(ctx, &dres))
	require.Len(t, dres.Installs, 1)
	assert.Equal(t, 1, dres.Installs[0].Installed)
	replay.Record(t, s.env.Client, drun.GetID(), drun.GetRunID(), "testdata/histories/agent-drift-repair.json")
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

	in := workflows.RolloutInput{Name: "cancelled-" + env.TaskQueue, Stages: []workflows.Stage{
		{Name: "first", Kind: workflows.KindTest, Concurrency: 2, Updates: workflows.TestUpdates(
			workflows.TestInput{Name: "a", Take: time.Hour, Compensate: time.Second},
			workflows.TestInput{Name: "b", Take: time.Hour, Compensate: time.Second},
			workflows.TestInput{Name: "c", Take: time.Second})},
		{Name: "second", Kind: workflows.KindTest, Concurrency: 1, Updates: workflows.TestUpdates(workflows.TestInput{Name: "d"})},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := workflows.RolloutWorkflowID(in.Name)
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, workflows.Rollout, in)
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
		cd, err := env.Client.DescribeWorkflowExecution(ctx, workflows.WorkflowID(workflows.KindTest, child), "")
		require.NoError(t, err)
		assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, cd.GetWorkflowExecutionInfo().GetStatus(), "%s ended before its parent", child)
	}
	desc, err := env.Client.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	sa := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	require.Contains(t, string(sa[workflows.SAState.GetName()].GetData()), string(workflows.StateCancelled))
	replay.Record(t, env.Client, id, run.GetRunID(), "testdata/histories/rollout-cancel.json")
}
