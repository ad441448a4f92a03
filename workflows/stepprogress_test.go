package workflows

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
)

// stepWaiter is a workflow whose one long step is a timer: only the
// step-progress signals move its progress.
func stepWaiter(ctx workflow.Context) error {
	p := Progress{Kind: "test", Target: "t", Unit: "bytes"}
	if _, err := NewLifecycle(ctx, &p, PhaseInstalling, nil, func() Progress { return p }); err != nil {
		return err
	}
	return workflow.Sleep(ctx, time.Hour)
}

// The progress query follows the step's reports, never backwards, and
// never another attempt's.
func TestStepProgressMovesTheQuery(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(stepWaiter)
	done := func() int64 {
		v, err := env.QueryWorkflow(ProgressQuery)
		require.NoError(t, err)
		var p Progress
		require.NoError(t, v.Get(&p))
		return p.Done
	}
	var seen []int64
	for i, r := range []activities.ProgressReport{
		{Done: 30, Total: 100},
		{Done: 20, Total: 100},                        // late: an earlier activity attempt's
		{AttemptID: uuid.New(), Done: 60, Total: 100}, // another attempt's
		{Done: 50, Total: 100},
	} {
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(activities.ProgressSignal, r)
		}, time.Duration(2*i+1)*time.Minute)
		env.RegisterDelayedCallback(func() { seen = append(seen, done()) }, time.Duration(2*i+2)*time.Minute)
	}
	env.ExecuteWorkflow(stepWaiter)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []int64{30, 30, 30, 50}, seen)
}
