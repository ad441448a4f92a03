package agents

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// An operator's pause that arrives in the workflow task in which the agent
// install continues as new (buffered with the start of the run's last
// child) is carried to the next run: it starts paused, and nothing new
// starts until a resume.
func TestAgentInstallCarriesAPauseBufferedInItsLastTask(t *testing.T) {
	f := newFakeFleet(25)
	in := vmInput()
	in.ChildrenPerRun, in.Concurrency = 10, 2
	env := f.env(t)
	started := 0
	env.SetOnChildWorkflowStartedListener(func(_ *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
		started++
		if started == in.ChildrenPerRun {
			// Delivered with the run's last child start, in one task.
			env.SignalWorkflowSkippingWorkflowTask(workflows.PauseSignal, nil)
		}
	})
	env.ExecuteWorkflow(AgentInstall, in)
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "the run did not continue as new: %v", env.GetWorkflowError())
	var next AgentInstallInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.Carry)
	require.Equal(t, in.ChildrenPerRun, next.Carry.Cursor)
	require.True(t, next.Carry.Paused, "the pause was lost at continue-as-new")
}
