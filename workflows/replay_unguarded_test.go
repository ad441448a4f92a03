package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
)

// The replay check catches what it is for: SPFirmwareUpdate with one more
// step (a precheck before everything else), unguarded, does not replay a
// recorded history; the same step behind workflow.GetVersion does.
func TestReplayFailsForUnguardedChange(t *testing.T) {
	const history = "testdata/histories/sp-firmware-happy-v2.json"
	replay := func(wf func(workflow.Context, SPFirmwareInput) (MGSUpdateResult, error)) error {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: "SPFirmwareUpdate"})
		return r.ReplayWorkflowHistoryFromJSONFile(nil, history)
	}
	require.NoError(t, replay(SPFirmwareUpdate), "the recorded history replays against today's code")

	unguarded := func(ctx workflow.Context, in SPFirmwareInput) (MGSUpdateResult, error) {
		if err := extraPrecheck(ctx, in); err != nil {
			return MGSUpdateResult{}, err
		}
		return SPFirmwareUpdate(ctx, in)
	}
	err := replay(unguarded)
	require.Error(t, err, "an unguarded extra step must fail replay")
	assert.ErrorContains(t, err, "TMPRL1100", "the SDK's nondeterminism error")

	guarded := func(ctx workflow.Context, in SPFirmwareInput) (MGSUpdateResult, error) {
		if workflow.GetVersion(ctx, "test-extra-precheck", workflow.DefaultVersion, 1) >= 1 {
			if err := extraPrecheck(ctx, in); err != nil {
				return MGSUpdateResult{}, err
			}
		}
		return SPFirmwareUpdate(ctx, in)
	}
	assert.NoError(t, replay(guarded), "the same step behind GetVersion replays the old history on the old path")
}

// extraPrecheck is the step the changed workflows add.
func extraPrecheck(ctx workflow.Context, in SPFirmwareInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	return workflow.ExecuteActivity(ctx, mgsActs.MGSPrecheck, activities.PrecheckInput{SP: in.SP.id()}).Get(ctx, nil)
}
