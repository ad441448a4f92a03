package agents

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
)

// carried is the red team's input: a benign selection with a carry as if
// an earlier rollout had planned it, naming another image.
func carried(f *fakeFleet) AgentInstallInput {
	in := vmInput()
	in.Selection = ServerSelection{Servers: []string{"cn000"}}
	plan := f.plan()
	in.Carry = &AgentInstallCarry{Runs: 1, RolloutID: uuid.New(), Plan: plan}
	return in
}

// A carry is what a run hands its next one at continue-as-new: a first
// run given one (a plan's or an operator's input) is refused before it
// touches anything, instead of skipping its planning and installing the
// carried image on the carried rollout's servers.
func TestAgentInstallRefusesACarryOnItsFirstRun(t *testing.T) {
	f := newFakeFleet(5)
	env := f.env(t)
	env.ExecuteWorkflow(AgentInstall, carried(f))
	err := env.GetWorkflowError()
	require.Error(t, err, "the carried plan ran: %d servers installed", len(f.spans))
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), err)
	assert.Equal(t, failure.InvalidAgentRequest, ae.Type())
	assert.Contains(t, ae.Message(), "carry")
	assert.Empty(t, f.spans, "no server installed")
}

// A start or a plan is refused the same way without a worker: the input's
// own check (workflows.CheckStart) names the carry.
func TestAgentInstallInputWithACarryIsNoStart(t *testing.T) {
	f := newFakeFleet(1)
	require.NoError(t, vmInput().ValidateStart())
	err := carried(f).ValidateStart()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "carry")
}
