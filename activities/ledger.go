// Package activities holds every piece of I/O fleetsaga's workflows do: one
// struct per domain holding its injected clients and the ledger store.
package activities

import (
	"context"
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// LedgerActivities write the ledger on behalf of workflows.
type LedgerActivities struct {
	Store *ledger.Store
	// Identity names this worker in the event log.
	Identity string
	// Temporal, when set, lets RecordIntent release an attempt whose
	// workflow was terminated (or timed out) without finishing it.
	Temporal client.Client
}

// RecordIntent writes an attempt before any device is touched. A target that
// is busy with another update is a non-retryable TargetBusy error; an
// attempt that already ended (its run was reset to before its end) is a
// non-retryable AttemptEnded error. An attempt a reset run takes over from
// the run it replaced says so in its event log.
func (a *LedgerActivities) RecordIntent(ctx context.Context, at ledger.Attempt) error {
	adopted, err := a.Store.AdoptIntent(ctx, at)
	var busy *ledger.ErrTargetBusy
	if errors.As(err, &busy) && a.releaseAbandoned(ctx, busy) {
		adopted, err = a.Store.AdoptIntent(ctx, at)
	}
	switch {
	case errors.As(err, &busy):
		return temporal.NewNonRetryableApplicationError(busy.Error(), failure.TargetBusy, nil, busy.UpdateID)
	case errors.Is(err, ledger.ErrAttemptEnded):
		return temporal.NewNonRetryableApplicationError("attempt "+at.ID.String()+" has already ended", failure.AttemptEnded, nil)
	case err != nil:
		return err
	}
	if err := a.Store.AppendEvent(ctx, ledger.Event{AttemptID: at.ID, Step: "intent", State: string(ledger.StatePending),
		Message: "attempt recorded for " + at.Target, Worker: WorkerIdentity(ctx, a.Identity)}); err != nil || !adopted {
		return err
	}
	return a.Store.AppendEvent(ctx, ledger.Event{AttemptID: at.ID, Step: "adopted:" + at.RunID,
		Message: "run " + at.RunID + " of " + at.WorkflowID + " took the attempt over (the workflow was reset)", Worker: WorkerIdentity(ctx, a.Identity)})
}

// RecordAttemptInput ends the previous attempt (if any) and writes the next
// attempt's intent (if any), in that order, so the target never has two
// active attempts.
type RecordAttemptInput struct {
	Finish *ledger.Finish  `json:"finish,omitempty"`
	Next   *ledger.Attempt `json:"next,omitempty"`
	// FinishNext ends Next at once (an update that never touched the
	// device: no change needed, or a failed precheck).
	FinishNext *ledger.Finish `json:"finishNext,omitempty"`
}

// RecordAttempt writes attempt transitions (idempotent by attempt ID): an
// attempt whose intent write is in doubt is written and ended in one step.
func (a *LedgerActivities) RecordAttempt(ctx context.Context, in RecordAttemptInput) error {
	if in.Finish != nil {
		if err := a.FinishAttempt(ctx, *in.Finish); err != nil {
			return err
		}
	}
	if in.Next != nil {
		if err := a.RecordIntent(ctx, *in.Next); err != nil && !a.endedByThisWrite(ctx, err, in.FinishNext) {
			return err
		}
	}
	if in.FinishNext != nil {
		return a.FinishAttempt(ctx, *in.FinishNext)
	}
	return nil
}

// SetProgress records phase and progress.
func (a *LedgerActivities) SetProgress(ctx context.Context, p ledger.Progress) error {
	return a.Store.SetProgress(ctx, p)
}

// FinishAttempt ends an attempt and logs the ending as an event.
func (a *LedgerActivities) FinishAttempt(ctx context.Context, f ledger.Finish) error {
	if err := a.Store.FinishAttempt(ctx, f); err != nil {
		return err
	}
	msg := f.Outcome
	if f.Error != "" {
		msg = f.Outcome + ": " + f.Error
	}
	return a.Store.AppendEvent(ctx, ledger.Event{AttemptID: f.AttemptID, Step: "finish", State: string(f.State),
		Message: msg, Worker: WorkerIdentity(ctx, a.Identity)})
}

// AppendEvent adds one step to an attempt's event log.
func (a *LedgerActivities) AppendEvent(ctx context.Context, e ledger.Event) error {
	if e.Worker == "" {
		e.Worker = WorkerIdentity(ctx, a.Identity)
	}
	return a.Store.AppendEvent(ctx, e)
}

// ReleaseAbandoned releases busy's attempt when the workflow that recorded
// it has closed without ending it (for another kind's ledger activities).
func ReleaseAbandoned(ctx context.Context, a *LedgerActivities, busy *ledger.ErrTargetBusy) bool {
	return a.releaseAbandoned(ctx, busy)
}

// releaseAbandoned ends the active attempt of busy when its owner no longer
// runs: a terminated or timed-out workflow never ran its compensations or
// its ledger writes, and its attempt would otherwise block the target
// forever. The owner is the attempt's run chain, not its run: a workflow
// that continued as new (or was reset) runs on under another run ID, and
// that current run still owns the attempt. A fresh start under the same
// workflow ID is a new chain (another first run ID) and does not. A running
// owner, or one Temporal cannot tell about, keeps the attempt.
func (a *LedgerActivities) releaseAbandoned(ctx context.Context, busy *ledger.ErrTargetBusy) bool {
	if a.Temporal == nil || busy.WorkflowID == "" {
		return false
	}
	closed, why := a.ownerClosed(ctx, busy)
	if !closed {
		return false
	}
	why = "abandoned: " + why + " without finishing this attempt"
	if err := a.Store.FinishAttempt(ctx, ledger.Finish{AttemptID: busy.ActiveID, State: ledger.StateFailed, Outcome: "abandoned", Error: why}); err != nil {
		return false
	}
	_ = a.Store.AppendEvent(ctx, ledger.Event{AttemptID: busy.ActiveID, Step: "abandoned", State: string(ledger.StateFailed),
		Message: why, Worker: WorkerIdentity(ctx, a.Identity)})
	return true
}

// ownerClosed reports whether the run chain that recorded busy's attempt has
// ended, and how (for the ledger).
func (a *LedgerActivities) ownerClosed(ctx context.Context, busy *ledger.ErrTargetBusy) (bool, string) {
	// The recorded run: its chain's first run ID, and whether it still runs.
	chain, ended := busy.RunID, "ended"
	if busy.RunID != "" {
		desc, err := a.Temporal.DescribeWorkflowExecution(ctx, busy.WorkflowID, busy.RunID)
		var nf *serviceerror.NotFound
		switch {
		case errors.As(err, &nf):
			// Past retention: long closed. Its chain is unknown; the first
			// run is the best guess (most attempts are recorded there).
		case err != nil:
			return false, ""
		default:
			info := desc.GetWorkflowExecutionInfo()
			if Running(info.GetStatus()) {
				return false, ""
			}
			if info.GetFirstRunId() != "" {
				chain = info.GetFirstRunId()
			}
			ended = "ended (" + info.GetStatus().String() + ")"
		}
	}
	// The workflow ID's current run: the same chain still running (after
	// continue-as-new or a reset) owns the attempt.
	cur, err := a.Temporal.DescribeWorkflowExecution(ctx, busy.WorkflowID, "")
	var nf *serviceerror.NotFound
	if err != nil && !errors.As(err, &nf) {
		return false, ""
	}
	if err == nil {
		info := cur.GetWorkflowExecutionInfo()
		sameChain := busy.RunID == "" || info.GetFirstRunId() == chain || info.GetExecution().GetRunId() == busy.RunID
		if sameChain && Running(info.GetStatus()) {
			return false, ""
		}
		if sameChain {
			return true, "workflow " + busy.WorkflowID + " run " + info.GetExecution().GetRunId() + " ended (" + info.GetStatus().String() + ")"
		}
	}
	return true, "workflow " + busy.WorkflowID + " run " + busy.RunID + " " + ended
}

// Running: the owner may still write the attempt (unspecified is treated as
// running, to keep the attempt when Temporal cannot tell).
func Running(s enumspb.WorkflowExecutionStatus) bool {
	return s == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || s == enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED
}

// WorkerIdentity is the worker named in ledger events: the configured
// identity, else the activity's task queue.
func WorkerIdentity(ctx context.Context, configured string) string {
	if configured != "" {
		return configured
	}
	if activity.IsActivity(ctx) {
		return activity.GetInfo(ctx).TaskQueue
	}
	return ""
}

// endedByThisWrite: the intent was refused because its attempt has ended,
// and it ended as finish says (an earlier try of this same write got that
// far): not an error. An attempt ended otherwise (by a run an operator
// reset) stays AttemptEnded, for the workflow to take the next one.
func (a *LedgerActivities) endedByThisWrite(ctx context.Context, err error, finish *ledger.Finish) bool {
	if finish == nil || !isAttemptEnded(err) {
		return false
	}
	got, gerr := a.Store.Get(ctx, finish.AttemptID)
	return gerr == nil && got.State == finish.State && got.Outcome == finish.Outcome
}

func isAttemptEnded(err error) bool {
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.Type() == failure.AttemptEnded
}

// WorkflowRunning says whether workflow id (its current run) still runs: an
// abandoned child asks it of its rollout. An unknown workflow does not; a
// worker without a Temporal client cannot tell, and says it runs.
func (a *LedgerActivities) WorkflowRunning(ctx context.Context, id string) (bool, error) {
	if a.Temporal == nil {
		return true, nil
	}
	desc, err := a.Temporal.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return Running(desc.GetWorkflowExecutionInfo().GetStatus()), nil
}
