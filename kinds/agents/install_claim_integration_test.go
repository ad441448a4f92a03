package agents_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// Two rollouts that share an agent on the same servers race: vm-agent pinned at 1.0.5 (dc/vm-agent) and every agent at its
// newest (dc/all-agents, vm-agent 1.1.0). Their targets differ, yet no
// server may get vm-agent installed with two images: the ledger refuses
// the second rollout (TargetBusy) while the first holds its agents.
func TestAgentInstallsSharingAnAgentNeverBothInstallIt(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	d := spec.GenerateDatacenter(3, 41)
	newest, _ := d.ImageFor("vm-agent", spec.GeneratedNewVersion)
	mid := newest
	mid.UUID, mid.Version = uuid.New(), "1.0.5"
	d.Images = append(d.Images, mid)
	s := newAgentStack(t, d, 100)
	s.worker()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	pinned := agents.AgentInstallInput{Agents: []agents.AgentRequest{{Name: "vm-agent", ImageUUID: mid.UUID}},
		Selection: agents.ServerSelection{All: true}, Concurrency: 1, PollInterval: time.Second}
	all := agents.AgentInstallInput{AllAgents: true, Selection: agents.ServerSelection{All: true}, PollInterval: time.Second}
	runs := []client.WorkflowRun{s.start(t, ctx, pinned), s.start(t, ctx, all)}
	refused, completed := 0, 0
	for _, run := range runs {
		err := run.Get(ctx, nil)
		if err == nil {
			completed++
			replay.Record(t, s.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/agent-install-claimed.json")
			continue
		}
		var ae *temporal.ApplicationError
		require.ErrorAs(t, err, &ae, run.GetID())
		assert.Equal(t, failure.TargetBusy, ae.Type(), "%s: %v", run.GetID(), err)
		refused++
		replay.Record(t, s.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/agent-install-refused-busy.json")
	}
	assert.Equal(t, 1, completed, "one rollout ran")
	assert.Equal(t, 1, refused, "the other was refused")

	// Fleetsim's truth: one vm-agent image per server, no two tasks at once.
	tr := s.truth(t)
	images := map[uuid.UUID]map[uuid.UUID]bool{}
	for i, rec := range tr.Installs {
		if rec.Agent == "vm-agent" && rec.Outcome == triton.TaskComplete {
			if images[rec.ServerUUID] == nil {
				images[rec.ServerUUID] = map[uuid.UUID]bool{}
			}
			images[rec.ServerUUID][rec.ImageUUID] = true
		}
		for _, other := range tr.Installs[:i] {
			if other.ServerUUID == rec.ServerUUID {
				assert.False(t, rec.Started.Before(other.Finished) && other.Started.Before(rec.Finished),
					"%s: tasks %s and %s overlap", rec.Hostname, other.TaskID, rec.TaskID)
			}
		}
	}
	require.Len(t, images, len(d.Servers), "vm-agent was installed on every server")
	for srv, ims := range images {
		assert.Len(t, ims, 1, "server %s got vm-agent installed with %d images", srv, len(ims))
	}

	// The ledger: both rollouts' attempts ended (one completed, one failed
	// busy), nothing is left active, no agent stays claimed.
	states := map[ledger.State]int{}
	for _, run := range runs {
		atts, err := s.env.Store.Attempts(ctx, run.GetID())
		require.NoError(t, err)
		require.Len(t, atts, 1, run.GetID())
		states[atts[0].State]++
		if atts[0].State == ledger.StateFailed {
			assert.Contains(t, atts[0].Error, "busy", run.GetID())
		}
	}
	assert.Equal(t, map[ledger.State]int{ledger.StateCompleted: 1, ledger.StateFailed: 1}, states)
	active, err := s.env.Store.List(ctx, ledger.ListFilter{Active: true})
	require.NoError(t, err)
	assert.Empty(t, active)
	claimed, err := s.env.Store.ActiveAgentClaims(ctx)
	require.NoError(t, err)
	assert.Zero(t, claimed)
}

// An agent install cancelled while it plans ends its ledger attempt
// cancelled on the real stack (chaos found it left pending), and touches
// nothing. With FLEETSAGA_RECORD_HISTORIES=1 its history is saved.
func TestAgentInstallCancelledWhilePlanningOnFleetsim(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	d := spec.GenerateDatacenter(3, 42)
	s := newAgentStack(t, d, 100)
	s.arm(t, faults.Fault{Kind: faults.Latency, Target: "api/cnapi", Latency: "2s"})
	s.worker()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := s.start(t, ctx, agents.AgentInstallInput{Agents: []agents.AgentRequest{{Name: "vm-agent"}},
		Selection: agents.ServerSelection{All: true}, PollInterval: time.Second})
	require.Eventually(t, func() bool {
		desc, err := s.env.Client.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
		if err != nil {
			return false
		}
		for _, pa := range desc.GetPendingActivities() {
			if pa.GetActivityType().GetName() == "PlanAgentInstall" {
				return true
			}
		}
		return false
	}, time.Minute, 50*time.Millisecond, "planning started")
	require.NoError(t, s.env.Client.CancelWorkflow(ctx, run.GetID(), run.GetRunID()))
	err := run.Get(ctx, nil)
	var ce *temporal.CanceledError
	require.ErrorAs(t, err, &ce)

	atts, err := s.env.Store.Attempts(ctx, run.GetID())
	require.NoError(t, err)
	require.Len(t, atts, 1)
	assert.Equal(t, ledger.StateCancelled, atts[0].State, "the rollout's attempt ended cancelled")
	assert.Empty(t, s.truth(t).Installs, "nothing was touched")
	replay.Record(t, s.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/agent-install-cancelled-planning.json")
}
