package agents

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// When reading the next page of the plan fails, servers already started
// still run: the parent waits for them before it summarises, so the summary
// counts them as they ended, not as "running".
func TestAgentInstallPlanPageFailureWaitsForRunningServersBeforeSummary(t *testing.T) {
	f := newFakeFleet(5)
	env := f.newEnv()
	env.OnActivity(agentLedger.FinishAttempt, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(agentActs.PlanAgentInstall, mock.Anything, mock.Anything).Return(f.plan(), nil)
	env.OnActivity(agentActs.NextAgentServers, mock.Anything, mock.Anything).Return(
		func(_ context.Context, r NextAgentServersRequest) ([]ledger.AgentServer, error) {
			if r.After > 0 {
				return nil, temporal.NewNonRetryableApplicationError("plan page unreadable", "LedgerBroken", nil)
			}
			return f.servers, nil
		})
	env.OnActivity(agentActs.StopAgentRollout, mock.Anything, mock.Anything).Return(0, nil).Maybe()
	finishedAtSummary := -1
	env.OnActivity(agentActs.SummarizeAgentRollout, mock.Anything, mock.Anything).Return(
		func(_ context.Context, _ uuid.UUID) (AgentRolloutSummary, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			finishedAtSummary = len(f.results)
			return AgentRolloutSummary{Counts: map[string]int{ledger.AgentServerDone: len(f.results)}}, nil
		})
	in := vmInput()
	in.Concurrency = 2
	f.take["cn004"] = 10 * time.Minute // still running when the next page fails
	env.ExecuteWorkflow(AgentInstall, in)
	require.Error(t, env.GetWorkflowError())
	require.ErrorContains(t, env.GetWorkflowError(), "plan page unreadable")
	require.Equal(t, 5, finishedAtSummary, "every started server ended before the summary")
}
