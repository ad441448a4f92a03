package rollout

import (
	"testing"
	"time"

	"github.com/fleetsaga/fleetsaga/workflows"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
)

// The rollout publishes only typed phase names as FleetsagaPhase (a Keyword
// the Web UI filters on), never stage names or counts.
func TestRolloutPublishesOnlyTypedPhases(t *testing.T) {
	env := newRolloutEnv(t)
	var phases []string
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		if v, ok := args.Get(0).(temporal.SearchAttributes).GetKeyword(workflows.SAPhase); ok {
			phases = append(phases, v)
		}
	}).Return(nil)
	env.ExecuteWorkflow(Rollout, RolloutInput{Name: "ph", Stages: []Stage{
		{Name: "first", Kind: kindTest, Concurrency: 1, Updates: updates(testInput{Name: "a", Take: time.Minute})}}})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{string(workflows.PhaseRunningStage), string(workflows.PhaseDone)}, phases)
}
