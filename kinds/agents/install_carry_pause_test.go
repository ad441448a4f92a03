package agents

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// continuedWithSignalsInLastTask runs an install's first run over f (10
// children per run, a window of 2) and delivers signals, in order, with
// the start of its last child: the workflow task in which it continues as
// new. It returns the next run's input.
func continuedWithSignalsInLastTask(t *testing.T, f *fakeFleet, signals ...string) AgentInstallInput {
	t.Helper()
	in := vmInput()
	in.ChildrenPerRun, in.Concurrency = 10, 2
	env := f.env(t)
	started := 0
	env.SetOnChildWorkflowStartedListener(func(_ *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
		started++
		if started == in.ChildrenPerRun {
			for _, s := range signals { // buffered: delivered together, in this order
				env.SignalWorkflowSkippingWorkflowTask(s, nil)
			}
		}
	})
	env.ExecuteWorkflow(AgentInstall, in)
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "the run did not continue as new: %v", env.GetWorkflowError())
	var next AgentInstallInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.Carry)
	require.Equal(t, in.ChildrenPerRun, next.Carry.Cursor)
	return next
}

// An operator's pause that arrives in the workflow task in which the agent
// install continues as new (buffered with the start of the run's last
// child) is carried to the next run: it starts paused, and nothing new
// starts until a resume.
func TestAgentInstallCarriesAPauseBufferedInItsLastTask(t *testing.T) {
	f := newFakeFleet(25)
	next := continuedWithSignalsInLastTask(t, f, workflows.PauseSignal)
	require.True(t, next.Carry.Paused, "the pause was lost at continue-as-new")

	env := f.env(t)
	env.SetContinuedExecutionRunID("run-1") // as Temporal starts a run continued as new
	var whilePaused workflows.Progress
	serversWhilePaused := -1
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(workflows.ProgressQuery)
		require.NoError(t, err)
		require.NoError(t, v.Get(&whilePaused))
		serversWhilePaused = len(f.spans)
		env.SignalWorkflow(workflows.ResumeSignal, nil)
	}, time.Hour)
	env.ExecuteWorkflow(AgentInstall, next)
	assert.Equal(t, workflows.StatePaused, whilePaused.State, "the next run did not start paused")
	assert.Equal(t, 10, serversWhilePaused, "only the first run's servers ran while paused")
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(env.GetWorkflowError(), &can), "after the resume the run goes on to its share: %v", env.GetWorkflowError())
	assert.Len(t, f.spans, 20)
}

// A pause and a resume delivered in that last task are applied in the
// order they arrived: the last one is what the next run starts with.
func TestAgentInstallCarriesTheLastOfAPauseAndAResumeInItsLastTask(t *testing.T) {
	for _, tc := range []struct {
		signals []string
		paused  bool
	}{
		{[]string{workflows.PauseSignal, workflows.ResumeSignal}, false},
		{[]string{workflows.ResumeSignal, workflows.PauseSignal}, true},
	} {
		t.Run(fmt.Sprint(tc.signals), func(t *testing.T) {
			next := continuedWithSignalsInLastTask(t, newFakeFleet(25), tc.signals...)
			assert.Equal(t, tc.paused, next.Carry.Paused)
		})
	}
}
