package activities

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
)

// ProgressSignal is the signal a long device step sends its own workflow
// at each tenth of the way (ProgressReporter), so the workflow's progress
// query and Web UI current details move during the step
// (workflows.Lifecycle receives it).
//
// Why a signal from the activity, not the alternatives:
//   - Heartbeat details are what the step already reports, but workflow
//     code never sees them: neither the query nor the current details can
//     read them.
//   - Splitting the step into legs that return at each tenth costs six
//     events a leg (activity scheduled, started, completed and a workflow
//     task) against four for a signal (signaled and a workflow task), and
//     every leg restarts the step's polling (its pacing, its first reads).
//   - An Update from the activity would add accepted and completed events
//     to the workflow task's, and the activity would wait for the
//     workflow: more events and a dependency for a report nobody waits on.
//
// A signal per tenth bounds the history by the step, not by device time:
// at most ProgressSteps-1 per activity attempt (the end comes with the
// activity's result).
const ProgressSignal = "fleetsaga-progress"

// ProgressSteps is how many parts a long step's progress is reported in:
// the workflow hears of it at least every 10% of the step.
const ProgressSteps = 10

// ProgressMinGap spaces the signals of a short step: the Web UI and
// starter watch refresh every few seconds, so tenths reached faster than
// this (a step shorter than ten gaps, such as a sped-up simulator's
// delivery) would cost a workflow task each that nobody sees. A step
// longer than ten gaps is reported at every tenth.
const ProgressMinGap = 2 * time.Second

// ProgressSignalTimeout bounds one progress signal: it is called from
// inside the step's own I/O (between an upload's reads, between polls),
// and a report nobody waits on must not hold the step while the server is
// away (the client retries until its context ends). The next tenth, or
// the step's result, says it again.
const ProgressSignalTimeout = 5 * time.Second

// ProgressReport is ProgressSignal's argument: how far the step of attempt
// AttemptID is (Done of Total, in the unit of the workflow's progress).
type ProgressReport struct {
	AttemptID uuid.UUID `json:"attemptId"`
	Done      int64     `json:"done"`
	Total     int64     `json:"total"`
}

// ProgressReporter signals the activity's workflow when a long step crosses
// the next tenth. One per activity attempt; the zero value of step means
// nothing reported yet.
type ProgressReporter struct {
	AttemptID uuid.UUID
	step      int64
	// last is when the last signal went (zero: none yet; the first
	// waits ProgressMinGap from the first report).
	last time.Time
}

// Report tells the workflow how far the step is, once per tenth reached
// and at most once per ProgressMinGap (the first report of a retried
// activity jumps to the current tenth). A signal that fails (the run
// ended, the server is briefly away) is only logged: the next tenth, or
// the step's result, says it again.
func (r *ProgressReporter) Report(ctx context.Context, done, total int64) {
	if total <= 0 || done <= 0 || !activity.IsActivity(ctx) {
		return
	}
	now := time.Now()
	if r.last.IsZero() {
		r.last = now
	}
	step := done * ProgressSteps / total
	if step <= r.step || step >= ProgressSteps || now.Sub(r.last) < ProgressMinGap {
		return
	}
	r.step, r.last = step, now
	info := activity.GetInfo(ctx)
	if _, err := uuid.Parse(info.WorkflowExecution.RunID); err != nil {
		// Not a server's run (the SDK's test environment): nobody to
		// signal. The signal names the run, so a late one never reaches
		// the run a reset started after it.
		return
	}
	sctx, cancel := context.WithTimeout(ctx, ProgressSignalTimeout)
	defer cancel()
	err := activity.GetClient(ctx).SignalWorkflow(sctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID, ProgressSignal,
		ProgressReport{AttemptID: r.AttemptID, Done: done, Total: total})
	if err != nil {
		activity.GetLogger(ctx).Warn("progress signal to the workflow failed", "error", err)
	}
}
