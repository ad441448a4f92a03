package agents_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// A drift repair cancelled while its install runs ends cancelled, and its
// search state says so (it stayed "running" before the lifecycle); the
// install it started ends cancelled too. With FLEETSAGA_RECORD_HISTORIES=1
// its history is saved for the replay test.
func TestAgentDriftRepairCancelledDuringInstallEndsCancelled(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	d := spec.GenerateDatacenter(3, 43)
	s := newAgentStack(t, d, 10)
	s.worker()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sapi, err := triton.NewSAPI(s.sim.URL + "/sapi")
	require.NoError(t, err)
	img, _ := d.ImageFor("vm-agent", spec.GeneratedNewVersion)
	_, err = sapi.SetInstanceImage(ctx, d.Servers[0].Agents[3].UUID, d.Servers[0].UUID, img.UUID) // intent ahead
	require.NoError(t, err)

	in := agents.AgentDriftInput{Agents: []string{"vm-agent"}, Selection: agents.ServerSelection{All: true},
		Repair: true, PollInterval: time.Second}
	run, err := s.env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.WorkflowID(workflows.KindAgentDrift, in.Target()), TaskQueue: s.env.TaskQueue,
	}, agents.AgentDriftCheck, in)
	require.NoError(t, err)
	install := workflows.WorkflowID(workflows.KindAgentInstall, "dc/vm-agent")
	require.Eventually(t, func() bool {
		desc, err := s.env.Client.DescribeWorkflowExecution(ctx, install, "")
		return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, time.Minute, 50*time.Millisecond, "the repair's install started")
	require.NoError(t, s.env.Client.CancelWorkflow(ctx, run.GetID(), run.GetRunID()))
	var ce *temporal.CanceledError
	require.ErrorAs(t, run.Get(ctx, nil), &ce)

	desc, err := s.env.Client.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
	require.NoError(t, err)
	sa := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	assert.Contains(t, string(sa[workflows.SAState.GetName()].GetData()), string(workflows.StateCancelled))
	require.Eventually(t, func() bool {
		atts, err := s.env.Store.Attempts(ctx, install)
		return err == nil && len(atts) == 1 && atts[0].State == ledger.StateCancelled
	}, time.Minute, 100*time.Millisecond, "the install's attempt ended cancelled")
	replay.Record(t, s.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/agent-drift-cancelled-repair.json")
}
