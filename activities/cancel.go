package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"
)

// CancelRequested says whether an activity's context ended because its
// workflow or the activity itself was cancelled: the SDK then sets the
// context's cause to a CanceledError (from the heartbeat's answer). Every
// other end has another cause, and is no reason to undo anything: a
// graceful worker shutdown (worker.ErrWorkerShutdown), a pause or reset of
// the activity (activity.ErrActivityPaused, ErrActivityReset), a heartbeat
// that failed or found the workflow gone (its error), the deadline
// (context.DeadlineExceeded). The activity then returns, and Temporal
// retries it or the workflow decides.
func CancelRequested(ctx context.Context) bool {
	var ce *temporal.CanceledError
	return errors.Is(ctx.Err(), context.Canceled) && errors.As(context.Cause(ctx), &ce)
}
