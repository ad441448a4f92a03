package agents_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// An operator resets a drift repair while the install it started for a
// server behind its intent runs, to each point. The fix is made once: the
// server got the intended image installed exactly once, it agrees with its
// SAPI intent and CNAPI record, the repair's install ended with no attempt
// left active, and the reset run's report says no drift is left.
func TestAgentDriftRepairResetWhileItsInstallRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	// One agent per point: the drift's and its install's workflow IDs are
	// named by the agent, and each subtest's must be its own.
	agentAt := []int{3, 4, 2}
	for i, p := range testenv.ResetPoints {
		t.Run(string(p), func(t *testing.T) {
			agent := spec.GeneratedAgents[agentAt[i]]
			d := spec.GenerateDatacenter(3, int64(47+i))
			d.Servers[0].InstallSlowness = 5 // the install runs long enough to reset in
			s := newAgentStack(t, d, 10)
			s.worker()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			sapi, err := triton.NewSAPI(s.sim.URL + "/sapi")
			require.NoError(t, err)
			img, ok := d.ImageFor(agent, spec.GeneratedNewVersion)
			require.True(t, ok)
			require.Equal(t, agent, d.Servers[0].Agents[agentAt[i]].Name)
			_, err = sapi.SetInstanceImage(ctx, d.Servers[0].Agents[agentAt[i]].UUID, d.Servers[0].UUID, img.UUID) // intent ahead
			require.NoError(t, err)

			in := agents.AgentDriftInput{Agents: []string{agent}, Selection: agents.ServerSelection{All: true},
				Repair: true, PollInterval: time.Second}
			run, err := s.env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
				ID: workflows.WorkflowID(workflows.KindAgentDrift, in.Target()), TaskQueue: s.env.TaskQueue,
			}, agents.AgentDriftCheck, in)
			require.NoError(t, err)
			install := workflows.WorkflowID(workflows.KindAgentInstall, "dc/"+agent)
			require.Eventually(t, func() bool {
				desc, err := s.env.Client.DescribeWorkflowExecution(ctx, install, "")
				return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
			}, time.Minute, 50*time.Millisecond, "the repair's install started")
			reset := testenv.ResetWorkflow(t, s.env.Client, run.GetID(), p)

			var res agents.AgentDriftResult
			require.NoError(t, reset.Get(ctx, &res))
			require.NotNil(t, res.Remaining, "%+v", res)
			assert.Zero(t, driftCount(res.Remaining.Counts), "drift left after the repair: %+v", res)
			for _, r := range res.Installs {
				assert.Empty(t, r.Error, "the reset run's report of its install: %+v", r)
			}

			require.Eventually(t, func() bool {
				desc, err := s.env.Client.DescribeWorkflowExecution(ctx, install, "")
				return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
			}, time.Minute, 100*time.Millisecond, "the repair's install ended")
			tr := s.truth(t)
			completes := 0
			for _, rec := range tr.Installs {
				if rec.ServerUUID == d.Servers[0].UUID && rec.Outcome == triton.TaskComplete {
					completes++
				}
			}
			assert.Equal(t, 1, completes, "the fix was installed once: %+v", tr.Installs)
			checkAgreement(t, tr, agent, img.UUID, map[uuid.UUID]bool{d.Servers[0].UUID: true})
			atts, err := s.env.Store.Attempts(ctx, install)
			require.NoError(t, err)
			require.NotEmpty(t, atts)
			for _, a := range atts {
				assert.False(t, a.State.Active(), "attempt %s left %s", a.ID, a.State)
			}
			if p == testenv.ResetFirst {
				replay.Record(t, s.env.Client, reset.GetID(), reset.GetRunID(), "../testdata/histories/agent-drift-reset-first-task.json")
			}
		})
	}
}

func driftCount(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}
