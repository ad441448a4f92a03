package agents

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
	env.RegisterActivity(&AgentActivities{})
	env.RegisterActivity(&activities.LedgerActivities{})
	var rollout uuid.UUID
	env.OnActivity(agentLedgerActs.ClaimAgents, mock.Anything, mock.Anything).Return(nil).Maybe()
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

// A server's install cancelled while its intent is being written ends the
// attempt whose write is in doubt by writing and ending it in one step, so
// a write that lands after the cancel leaves nothing pending.
func TestAgentInstallServerCancelledWhileRecordingIntentEndsTheAttemptInDoubt(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(AgentInstallServer)
	env.RegisterActivity(&AgentActivities{})
	env.RegisterActivity(&activities.LedgerActivities{})
	env.OnActivity(agentLedger.RecordIntent, mock.Anything, mock.Anything).Return(nil).After(time.Hour)
	var ends []FinishAgentServerRequest
	env.OnActivity(agentActs.FinishAgentServer, mock.Anything, mock.Anything).Return(
		func(_ context.Context, r FinishAgentServerRequest) error {
			ends = append(ends, r)
			return nil
		})
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	in := AgentServerInput{RolloutID: uuid.New(), Seq: 1, Server: uuid.New(), Hostname: "cn0",
		Agents: []PlannedAgent{{Name: "vm-agent", ImageUUID: uuid.New(), Version: "1.1.0"}}}
	env.ExecuteWorkflow(AgentInstallServer, in)

	err := env.GetWorkflowError()
	require.Error(t, err)
	assert.True(t, temporal.IsCanceledError(err), err)
	require.Len(t, ends, 1)
	end := ends[0]
	require.NotNil(t, end.Intent, "the attempt in doubt is written before it is ended")
	assert.Equal(t, end.Intent.ID, end.AttemptID)
	assert.Equal(t, ServerTarget(in.Server), end.Intent.Target)
	assert.Equal(t, in.RolloutID, end.RolloutID)
	assert.Equal(t, ledger.StateCancelled, end.State)
}
