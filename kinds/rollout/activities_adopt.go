package rollout

import (
	"context"
	"errors"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
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
	// ParentRun is the rollout's original run ID: the update's parent
	// must be a run of it (a run reset keeps it), not an earlier rollout
	// of the same plan. "": any run of Parent (a rollout before this was
	// asked).
	ParentRun string `json:"parentRun,omitempty"`
}

// AdoptUpdateResult is how an adopted update ended (Ours false: it is not
// the rollout's, and was left alone; Ended says it is not running).
type AdoptUpdateResult struct {
	Ours      bool           `json:"ours"`
	Ended     bool           `json:"ended,omitempty"`
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
	info := desc.GetWorkflowExecutionInfo()
	ours, err := a.runOf(ctx, info.GetParentExecution(), in)
	if err != nil || !ours {
		return AdoptUpdateResult{Ended: info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING}, err
	}
	run := a.Temporal.GetWorkflow(ctx, in.WorkflowID, desc.GetWorkflowExecutionInfo().GetExecution().GetRunId())
	for {
		wctx, cancel := context.WithTimeout(ctx, adoptPoll)
		var res map[string]any
		err := run.Get(wctx, &res)
		cancel()
		switch {
		case ctx.Err() != nil:
			// The rollout was cancelled, or terminated: so is its update,
			// as its children are. A worker shutdown, a pause, a heartbeat
			// timeout, the deadline or a reset of the rollout leave it
			// running (the wait is retried, or the reset run adopts it).
			cctx, stop := context.WithTimeout(context.Background(), adoptCancelTimeout)
			if activities.CancelRequested(ctx) || a.rolloutTerminated(cctx, ctx, in) {
				_ = a.Temporal.CancelWorkflow(cctx, in.WorkflowID, "")
			}
			stop()
			return AdoptUpdateResult{}, ctx.Err()
		case errors.Is(wctx.Err(), context.DeadlineExceeded) || pollExpired(err):
			activity.RecordHeartbeat(ctx, in.WorkflowID)
			continue
		case err == nil:
			return AdoptUpdateResult{Ours: true, Ended: true, Result: res}, nil
		}
		var ce *temporal.CanceledError
		return AdoptUpdateResult{Ours: true, Ended: true, Error: failure.Line(err), Cancelled: errors.As(err, &ce)}, nil
	}
}

// rolloutTerminated says whether the adopter's context ended because its
// rollout was terminated: a heartbeat found the run gone (a reset also
// ends the run it replaces, so the rollout's latest run is asked) and the
// rollout's latest run was terminated.
func (a *RolloutActivities) rolloutTerminated(cctx, ctx context.Context, in AdoptUpdateInput) bool {
	var gone *serviceerror.NotFound
	if !errors.As(context.Cause(ctx), &gone) {
		return false
	}
	desc, err := a.Temporal.DescribeWorkflowExecution(cctx, in.Parent, "")
	return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED
}

// runOf says whether parent is a run of the rollout in names: its
// original run, or a run an operator's reset made of it (whose first
// event names the original run).
func (a *RolloutActivities) runOf(ctx context.Context, parent *commonpb.WorkflowExecution, in AdoptUpdateInput) (bool, error) {
	if parent.GetWorkflowId() != in.Parent {
		return false, nil
	}
	if in.ParentRun == "" || parent.GetRunId() == in.ParentRun {
		return true, nil
	}
	iter := a.Temporal.GetWorkflowHistory(ctx, parent.GetWorkflowId(), parent.GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !iter.HasNext() {
		return false, nil
	}
	first, err := iter.Next()
	if err != nil {
		return false, err
	}
	return first.GetWorkflowExecutionStartedEventAttributes().GetOriginalExecutionRunId() == in.ParentRun, nil
}

// pollExpired says whether a wait ended because its long poll timed out:
// the server enforces the deadline the client sent and may answer
// DEADLINE_EXCEEDED a moment before the client's context expires.
func pollExpired(err error) bool {
	var de *serviceerror.DeadlineExceeded
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &de)
}
