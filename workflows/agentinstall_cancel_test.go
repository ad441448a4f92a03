package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// An agent install cancelled while it plans ends its ledger attempt
// cancelled (chaos found it left pending: the ending ran on the cancelled
// context and was never scheduled).
func TestAgentInstallCancelledWhilePlanningEndsItsAttempt(t *testing.T) {
	f := newFakeFleet(3)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(AgentInstall)
	env.RegisterActivity(&activities.AgentActivities{})
	env.RegisterActivity(&activities.LedgerActivities{})
	var rollout uuid.UUID
	env.OnActivity(agentLedger.ClaimAgents, mock.Anything, mock.Anything).Return(nil).Maybe()
	env.OnActivity(agentLedger.RecordIntent, mock.Anything, mock.Anything).Return(
		func(_ context.Context, a ledger.Attempt) error { rollout = a.ID; return nil })
	env.OnActivity(agentLedger.FinishAttempt, mock.Anything, mock.Anything).Return(
		func(_ context.Context, fin ledger.Finish) error { f.finished = append(f.finished, fin); return nil })
	env.OnActivity(agentActs.PlanAgentInstall, mock.Anything, mock.Anything).Return(f.plan(), nil).After(time.Hour)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(AgentInstall, vmInput())

	err := env.GetWorkflowError()
	require.Error(t, err)
	assert.True(t, temporal.IsCanceledError(err), err)
	require.NotEqual(t, uuid.Nil, rollout)
	require.Len(t, f.finished, 1, "the rollout's attempt is ended")
	assert.Equal(t, rollout, f.finished[0].AttemptID)
	assert.Equal(t, ledger.StateCancelled, f.finished[0].State)
}
