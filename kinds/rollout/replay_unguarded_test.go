package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The replay check catches what it is for. A rollout is a long-lived
// parent that moves to a new build at its next workflow task
// (AutoUpgrade): a new step in it, unguarded, does not replay a recorded
// rollout; the same step behind workflow.GetVersion does. (A device kind
// is Pinned: its runs finish on the build that started them, so its
// changes need no marker; workerapp's versioning tests show the pinning.)
func TestParentChangeWithoutMarkerFailsReplay(t *testing.T) {
	const history = "../testdata/histories/rollout-approval-unsigned.json"
	replay := func(wf func(workflow.Context, RolloutInput) (RolloutResult, error)) error {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: "Rollout"})
		return r.ReplayWorkflowHistoryFromJSONFile(nil, history)
	}
	require.NoError(t, replay(Rollout), "the recorded history replays against today's code")

	unguarded := func(ctx workflow.Context, in RolloutInput) (RolloutResult, error) {
		if err := workflow.Sleep(ctx, time.Second); err != nil { // a settling pause, say
			return RolloutResult{}, err
		}
		return Rollout(ctx, in)
	}
	err := replay(unguarded)
	require.Error(t, err, "an unguarded extra step must fail replay")
	assert.ErrorContains(t, err, "TMPRL1100", "the SDK's nondeterminism error")

	guarded := func(ctx workflow.Context, in RolloutInput) (RolloutResult, error) {
		if workflow.GetVersion(ctx, "test-settling-pause", workflow.DefaultVersion, 1) >= 1 {
			if err := workflow.Sleep(ctx, time.Second); err != nil {
				return RolloutResult{}, err
			}
		}
		return Rollout(ctx, in)
	}
	assert.NoError(t, replay(guarded), "the same step behind GetVersion replays the old history on the old path")
}
