package agents_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
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

	in := agents.AgentInstallInput{Agents: []agents.AgentRequest{{Name: "firewaller"}},
		Selection: agents.ServerSelection{All: true}, Concurrency: 2, MaxFailures: 1, PollInterval: time.Second}
	run := s.start(t, ctx, in)
	var res agents.AgentInstallResult
	require.NoError(t, run.Get(ctx, &res))
	assert.Equal(t, agents.AgentRolloutWithFailures, res.Outcome)
	assert.Equal(t, 3, res.Installed)
	assert.Equal(t, 1, res.Failed)
	replay.Record(t, s.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/agent-install-one-failed.json")
	child := run.GetID() + "/" + res.RolloutID.String() + "/" + d.Servers[2].UUID.String()
	replay.Record(t, s.env.Client, child, "", "../testdata/histories/agent-install-server-failed.json")
	installed := run.GetID() + "/" + res.RolloutID.String() + "/" + d.Servers[0].UUID.String()
	replay.Record(t, s.env.Client, installed, "", "../testdata/histories/agent-install-server-installed.json")

	// Drift: one server's intent is ahead of its actual image.
	sapi, err := triton.NewSAPI(s.sim.URL + "/sapi")
	require.NoError(t, err)
	img, _ := d.ImageFor("vm-agent", spec.GeneratedNewVersion)
	_, err = sapi.SetInstanceImage(ctx, d.Servers[0].Agents[3].UUID, d.Servers[0].UUID, img.UUID)
	require.NoError(t, err)
	din := agents.AgentDriftInput{Agents: []string{"vm-agent"}, Selection: agents.ServerSelection{All: true},
		Repair: true, PollInterval: time.Second}
	drun, err := s.env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.WorkflowID(workflows.KindAgentDrift, din.Target()), TaskQueue: s.env.TaskQueue,
	}, agents.AgentDriftCheck, din)
	require.NoError(t, err)
	var dres agents.AgentDriftResult
	require.NoError(t, drun.Get(ctx, &dres))
	require.Len(t, dres.Installs, 1)
	assert.Equal(t, 1, dres.Installs[0].Installed)
	replay.Record(t, s.env.Client, drun.GetID(), drun.GetRunID(), "../testdata/histories/agent-drift-repair.json")
}
