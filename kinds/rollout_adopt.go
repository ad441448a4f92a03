package kinds

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

// adopt takes over an update that an earlier run of this rollout started
// (an operator reset the rollout, which replays its stage and finds its own
// child still running under the update's workflow ID): it waits for it and
// books its ending as its own. It reports false for an update that is not
// this rollout's (another rollout's, or one started by hand).
func (r *rollout) adopt(ctx workflow.Context, id string, out *UpdateOutcome) bool {
	var a *RolloutActivities
	actx := workflow.WithActivityOptions(workflows.AwaitCancel(ctx), workflow.ActivityOptions{
		StartToCloseTimeout: adoptedUpdateBound, HeartbeatTimeout: adoptHeartbeat, RetryPolicy: workflows.DeviceRetry,
		Summary: "wait for " + id + " (started before a reset)",
	})
	var res AdoptUpdateResult
	err := workflow.ExecuteActivity(actx, a.AdoptUpdate, AdoptUpdateInput{
		WorkflowID: id, Parent: workflow.GetInfo(ctx).WorkflowExecution.ID,
	}).Get(ctx, &res)
	switch {
	case err != nil && workflows.IsCancel(ctx, err):
		out.State, out.Error = workflows.StateCancelled, "cancelled"
	case err != nil || !res.Ours:
		return false
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
	return true
}
