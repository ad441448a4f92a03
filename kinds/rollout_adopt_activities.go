package kinds

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
)

const (
	// adoptPoll is how long one wait for an adopted update lasts between
	// heartbeats.
	adoptPoll = 20 * time.Second
	// adoptCancelTimeout bounds passing a cancel on: the activity's own
	// context is already done, and a Temporal that does not answer must
	// not hold the rollout's cancel.
	adoptCancelTimeout = 10 * time.Second
)

// AdoptUpdateInput names the update a rollout found already running under
// the workflow ID it was about to start.
type AdoptUpdateInput struct {
	WorkflowID string `json:"workflowId"`
	// Parent is the rollout's workflow ID: only an update started by an
	// earlier run of the same rollout (one an operator reset) is adopted.
	Parent string `json:"parent"`
}

// AdoptUpdateResult is how an adopted update ended (Ours false: it is not
// the rollout's, and was left alone).
type AdoptUpdateResult struct {
	Ours      bool           `json:"ours"`
	Result    map[string]any `json:"result,omitempty"`
	Error     string         `json:"error,omitempty"`
	Cancelled bool           `json:"cancelled,omitempty"`
}

// AdoptUpdate waits for an update that an earlier run of the rollout
// started: a run reset by an operator replays its stage and finds its own
// child still running under the same workflow ID. Temporal does not make
// it this run's child, so the wait is here; a cancel of the rollout is
// passed on to it, as to a child.
func (a *RolloutActivities) AdoptUpdate(ctx context.Context, in AdoptUpdateInput) (AdoptUpdateResult, error) {
	desc, err := a.Temporal.DescribeWorkflowExecution(ctx, in.WorkflowID, "")
	if err != nil {
		return AdoptUpdateResult{}, err
	}
	if desc.GetWorkflowExecutionInfo().GetParentExecution().GetWorkflowId() != in.Parent {
		return AdoptUpdateResult{}, nil
	}
	run := a.Temporal.GetWorkflow(ctx, in.WorkflowID, desc.GetWorkflowExecutionInfo().GetExecution().GetRunId())
	for {
		wctx, cancel := context.WithTimeout(ctx, adoptPoll)
		var res map[string]any
		err := run.Get(wctx, &res)
		cancel()
		switch {
		case ctx.Err() != nil:
			// The rollout was cancelled: so is its update.
			cctx, stop := context.WithTimeout(context.Background(), adoptCancelTimeout)
			_ = a.Temporal.CancelWorkflow(cctx, in.WorkflowID, "")
			stop()
			return AdoptUpdateResult{}, ctx.Err()
		case errors.Is(wctx.Err(), context.DeadlineExceeded) || pollExpired(err):
			activity.RecordHeartbeat(ctx, in.WorkflowID)
			continue
		case err == nil:
			return AdoptUpdateResult{Ours: true, Result: res}, nil
		}
		var ce *temporal.CanceledError
		return AdoptUpdateResult{Ours: true, Error: failure.Line(err), Cancelled: errors.As(err, &ce)}, nil
	}
}

// pollExpired says whether a wait ended because its long poll timed out:
// the server enforces the deadline the client sent and may answer
// DEADLINE_EXCEEDED a moment before the client's context expires.
func pollExpired(err error) bool {
	var de *serviceerror.DeadlineExceeded
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &de)
}
