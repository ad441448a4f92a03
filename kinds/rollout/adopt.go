package rollout

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/workflows"
)

const (
	// adoptedUpdateBound bounds the wait for an adopted update: longer
	// than any kind's own bound, so the update ends first.
	adoptedUpdateBound = 24 * time.Hour
	// adoptHeartbeat: the wait heartbeats every 20 s (activities.adoptPoll).
	adoptHeartbeat = time.Minute
)

// adopter takes over, in a run an operator's reset made, the updates an
// earlier run of the rollout started.
type adopter struct{}

// adoptsEnded says whether this run adopts the updates an earlier run
// started and that already ended: a run made by an operator's reset (its
// run ID is not the original one). Without it a reset to before a batch
// would start its ended updates again (a second run, a second ledger
// attempt). Its children start with REJECT_DUPLICATE, so an ended update
// of the same ID is found and adopted (or, an earlier rollout's, started
// again).
func (adopter) adoptsEnded(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.WorkflowExecution.RunID != info.OriginalRunID
}

// adopt takes over an update that an earlier run of this rollout started
// (an operator reset the rollout, which replays its stage and finds its own
// child running, or ended, under the update's workflow ID): it waits for it
// and books its ending as its own. It reports ours false for an update
// that is not this rollout's (another rollout's, or one started by hand),
// and whether that one has ended.
func (adopter) adopt(ctx workflow.Context, id string, out *UpdateOutcome) (ours, ended bool) {
	var a *RolloutActivities
	actx := workflow.WithActivityOptions(workflows.AwaitCancel(ctx), workflow.ActivityOptions{
		StartToCloseTimeout: adoptedUpdateBound, HeartbeatTimeout: adoptHeartbeat, RetryPolicy: workflows.DeviceRetry,
		Summary: "wait for " + id + " (started before a reset)",
	})
	var res AdoptUpdateResult
	err := workflow.ExecuteActivity(actx, a.AdoptUpdate, AdoptUpdateInput{
		WorkflowID: id, Parent: workflow.GetInfo(ctx).WorkflowExecution.ID, ParentRun: workflow.GetInfo(ctx).OriginalRunID,
	}).Get(ctx, &res)
	switch {
	case err != nil && workflows.IsCancel(ctx, err):
		out.State, out.Error = workflows.StateCancelled, "cancelled"
	case err != nil || !res.Ours:
		return false, res.Ended
	case res.Cancelled:
		out.State, out.Error = workflows.StateCancelled, res.Error
	case res.Error != "":
		out.State, out.Error = workflows.StateFailed, res.Error
	default:
		out.State = workflows.StateCompleted
		if o, ok := res.Result["outcome"].(string); ok {
			out.Outcome = o
		}
	}
	return true, true
}
