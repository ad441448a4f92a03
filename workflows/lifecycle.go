package workflows

import (
	"errors"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// Lifecycle is what every update kind shares, so that a kind's workflow
// keeps only its steps:
//   - the phase, one typed value for the progress query, the ledger and the
//     Web UI;
//   - the ledger attempt: intent recorded before any device is touched, in a
//     way that is safe when the workflow is cancelled mid-write;
//   - compensations, registered before the action they undo;
//   - one cancel detection and one ending: compensations on a disconnected
//     context, then the ledger end, then the state the Web UI shows.
//
// A kind embeds one, points it at its Progress and calls its methods.
type Lifecycle struct {
	progress *Progress
	writer   attemptWriter

	// Attempt is the current ledger attempt: recorded, or being recorded
	// (recorded false) until its write returns. A cancel stops the wait for
	// the write, not the write, so the ending ends an attempt whose write is
	// in doubt by writing and ending it in one idempotent step.
	Attempt  *ledger.Attempt
	recorded bool
	ended    bool
	// prevEnd is the end of the previous attempt, written in one step with
	// the current attempt's intent (nextAttempt); while that write is in
	// doubt, the ending writes both again.
	prevEnd *ledger.Finish

	saga Saga
	// notes say what the compensations did; the ending adds them to its
	// message.
	notes []string
	// onPhase, when set, runs after each phase change (a kind that also
	// records its phase in the ledger).
	onPhase func(ctx workflow.Context, p Phase)
	// attemptIDs counts the attempt IDs this run derived (newAttemptID).
	attemptIDs int
	// detail is the current phase's detail, kept for the step progress
	// the current details add to it (followStepProgress).
	detail []string
}

// NewLifecycle starts an update's lifecycle: the progress query answers
// query() (the kind's Progress or a struct embedding it) and the Web UI
// shows the first phase (none yet when first is "": the first phase()
// publishes it; for a kind that has nothing to show until its intent). The
// state is running unless p already has one (a fan-out continued as new
// while paused).
func NewLifecycle[P any](ctx workflow.Context, p *Progress, first Phase, w attemptWriter, query func() P) (*Lifecycle, error) {
	now := workflow.Now(ctx)
	if p.State == "" {
		p.State = StateRunning
	}
	p.Phase, p.PhaseSince = first, now
	if p.Started.IsZero() {
		p.Started = now
	}
	l := &Lifecycle{progress: p, writer: w}
	Count(ctx, MetricUpdatesStarted, map[string]string{"kind": string(p.Kind)})
	if err := workflow.SetQueryHandler(ctx, ProgressQuery, func() (P, error) { return query(), nil }); err != nil {
		return nil, err
	}
	if first != "" {
		l.show(ctx, first)
	}
	l.followStepProgress(ctx)
	return l, nil
}

// Phase moves the update to phase p (detail is free text for the Web UI's
// current details, never the search attribute). It reports whether the
// phase changed.
func (l *Lifecycle) Phase(ctx workflow.Context, p Phase, detail ...string) bool {
	if l.progress.Phase == p {
		return false
	}
	l.progress.Phase, l.progress.PhaseSince = p, workflow.Now(ctx)
	l.show(ctx, p, detail...)
	if l.onPhase != nil {
		l.onPhase(ctx, p)
	}
	return true
}

// Step announces phase p with new detail, published even when the phase
// is unchanged (the next item of the same phase: an agent, a straggler).
func (l *Lifecycle) Step(ctx workflow.Context, p Phase, detail ...string) {
	if l.Phase(ctx, p, detail...) {
		return
	}
	l.detail = detail
	setCurrentDetails(ctx, l.progress.State, p, detail...) // the attribute already holds p
}

// show publishes phase p: as the search attribute when operators filter by
// it (a long wait), else in the current details, which cost no event.
func (l *Lifecycle) show(ctx workflow.Context, p Phase, detail ...string) {
	l.detail = detail
	if !p.Filtered() {
		setCurrentDetails(ctx, l.progress.State, p, detail...)
		return
	}
	SetSearchState(ctx, l.progress.State, p, detail...)
}

// RecordPhaseInLedger makes each phase change also the current ledger
// attempt's progress (for a kind whose ledger rows show the phase).
func (l *Lifecycle) RecordPhaseInLedger() {
	l.onPhase = func(ctx workflow.Context, p Phase) {
		if l.Attempt == nil {
			return
		}
		_ = LedgerCall(ctx, LedgerActs.SetProgress, ledger.Progress{
			AttemptID: l.Attempt.ID, Phase: string(p), Done: l.progress.Done, Total: l.progress.Total,
		}).Get(ctx, nil)
	}
}

// QuietPhase moves the update to phase p for the progress query only: the
// search attribute and the current details keep the previous phase (a
// short pause, such as the MGS pause between attempts).
func (l *Lifecycle) QuietPhase(ctx workflow.Context, p Phase) {
	l.progress.Phase, l.progress.PhaseSince = p, workflow.Now(ctx)
}

// FreshAttempt is the ledger row of this update's attempt n on target, under
// the run's next attempt ID.
func (l *Lifecycle) FreshAttempt(ctx workflow.Context, n int, kind Kind, target, artifact string) ledger.Attempt {
	return AttemptFor(ctx, l.newAttemptID(ctx), n, kind, target, artifact)
}

// AttemptFor is the ledger row of this workflow run's attempt n on target.
func AttemptFor(ctx workflow.Context, id uuid.UUID, n int, kind Kind, target, artifact string) ledger.Attempt {
	info := workflow.GetInfo(ctx)
	return ledger.Attempt{ID: id, UpdateID: info.WorkflowExecution.ID, Attempt: n, Kind: string(kind),
		Target: target, Artifact: artifact, WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID}
}

// RecordIntent writes attempt a before any device is touched. A target busy
// with another update is a non-retryable TargetBusy error and leaves nothing
// of ours to end. An attempt that already ended (the run was reset to
// before its end) is recorded again under the next attempt ID; one still
// active (reset while it ran) is this run's again.
func (l *Lifecycle) RecordIntent(ctx workflow.Context, a ledger.Attempt) error {
	for {
		l.Attempt, l.recorded, l.ended, l.prevEnd = &a, false, false, nil
		err := l.intentWritten(l.writer.Record(ctx, a))
		if !isAttemptEnded(err) {
			return err
		}
		l.skipEnded(ctx, &a)
	}
}

// skipEnded moves a past an attempt that already ended: the run was reset
// to before it, and its successor (the next ID and number) is this run's
// again, or new.
func (l *Lifecycle) skipEnded(ctx workflow.Context, a *ledger.Attempt) {
	a.ID = l.newAttemptID(ctx)
	a.Attempt++
}

// NextAttempt ends the current attempt as failed (why) and records a, the
// next attempt of the same update. A transitionWriter does both in one
// write, so the target is never free between them; a cancel mid-write
// leaves both in doubt, and the ending writes both again.
func (l *Lifecycle) NextAttempt(ctx workflow.Context, a ledger.Attempt, why string) error {
	tw, oneWrite := l.writer.(transitionWriter)
	if l.Attempt == nil || l.ended || !oneWrite {
		l.endAttempt(ctx, ledger.StateFailed, "attempt failed", why)
		return l.RecordIntent(ctx, a)
	}
	prev := ledger.Finish{AttemptID: l.Attempt.ID, State: ledger.StateFailed, Outcome: "attempt failed", Error: why}
	for {
		l.Attempt, l.recorded, l.ended, l.prevEnd = &a, false, false, &prev
		err := l.intentWritten(tw.Transition(ctx, activities.RecordAttemptInput{Finish: &prev, Next: &a}))
		if !isAttemptEnded(err) {
			return err
		}
		l.skipEnded(ctx, &a) // as in recordIntent
	}
}

// intentWritten takes the result of the current attempt's intent write.
func (l *Lifecycle) intentWritten(err error) error {
	switch {
	case err == nil:
		l.recorded, l.prevEnd = true, nil
	case IsTargetBusy(err), isAttemptEnded(err):
		l.Attempt, l.prevEnd = nil, nil
	}
	return err
}

// UnwrittenAttempt makes a the current attempt without writing it: the
// ending writes and ends it in one step, so an update that ends before it
// recorded an intent (no change needed, a failed precheck) still leaves
// its row.
func (l *Lifecycle) UnwrittenAttempt(a ledger.Attempt) {
	l.Attempt, l.recorded, l.ended, l.prevEnd = &a, false, false, nil
}

// AdoptAttempt makes an attempt already in the ledger (a resumed update's)
// the current one.
func (l *Lifecycle) AdoptAttempt(a ledger.Attempt) {
	l.Attempt, l.recorded, l.ended, l.prevEnd = &a, true, false, nil
}

// AttemptID is the current attempt's ID (uuid.Nil: none).
func (l *Lifecycle) AttemptID() uuid.UUID {
	if l.Attempt == nil {
		return uuid.Nil
	}
	return l.Attempt.ID
}

// BeforeAction registers the compensation of an action the workflow is
// about to take. It is registered first so that a cancel arriving while the
// action is in flight still undoes it; the undo must therefore be safe when
// the action never happened. A device action that the undo races must be
// started with awaitCancel, so the undo runs after it stopped.
func (l *Lifecycle) BeforeAction(name string, undo func(ctx workflow.Context) error) {
	l.saga.Add(name, undo)
}

// LastUndo registers a compensation that runs after every other one (a
// sweep that relies on the others having run).
func (l *Lifecycle) LastUndo(name string, undo func(ctx workflow.Context) error) {
	l.saga.AddLast(name, undo)
}

// NothingToUndo drops the registered compensations (the actions reached a
// point where undoing them is no longer possible or wanted).
func (l *Lifecycle) NothingToUndo() { l.saga = Saga{} }

// Undone notes what a compensation did, for the ending's message (ledger
// and progress).
func (l *Lifecycle) Undone(note string) { l.notes = append(l.notes, note) }

// AwaitCancel makes a cancel of the workflow wait until the activity has
// stopped (or finished) before the workflow goes on to compensate it.
func AwaitCancel(ctx workflow.Context) workflow.Context {
	return workflow.WithWaitForCancellation(ctx, true)
}

// IsCancel is the one cancel detection: the error is a cancellation, or the
// workflow was asked to cancel.
func IsCancel(ctx workflow.Context, err error) bool {
	return temporal.IsCanceledError(err) || errors.Is(ctx.Err(), workflow.ErrCanceled)
}

func IsTargetBusy(err error) bool { return hasFailureType(err, failure.TargetBusy) }

func isAttemptEnded(err error) bool { return hasFailureType(err, failure.AttemptEnded) }

func hasFailureType(err error, typ string) bool {
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.Type() == typ
}

// Ending says how a successful update ended.
type Ending struct {
	Outcome string
	Message string
	Phase   Phase // the final phase (PhaseDone unless the kind names its own)
	// FailedOutcome, when set, is the ledger outcome of a failed or
	// cancelled ending (default "failed" / "cancelled"), for a kind whose
	// outcomes also name its failures.
	FailedOutcome string
}

// End ends the update: on success with ok; on failure or cancel it runs the
// compensations on a disconnected context, ends the ledger attempt as failed
// or cancelled, and returns err (a cancellation as a CanceledError). Every
// path ends the attempt, also one whose intent write was in doubt.
func (l *Lifecycle) End(ctx workflow.Context, err error, ok Ending) error {
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	final := ok.Phase
	if final == "" {
		final = PhaseDone
	}
	state, ls, outcome, msg := StateCompleted, ledger.StateCompleted, ok.Outcome, ok.Message
	if err != nil {
		state, ls, outcome, msg = StateFailed, ledger.StateFailed, "failed", failure.Line(err)
		if IsCancel(ctx, err) {
			state, ls, outcome, msg = StateCancelled, ledger.StateCancelled, "cancelled", "cancelled in phase "+string(l.progress.Phase)
		}
		if ok.FailedOutcome != "" {
			outcome = ok.FailedOutcome
		}
		final = l.progress.Phase
		cerr := l.saga.Compensate(dctx)
		for _, n := range l.notes {
			msg += "; " + n
		}
		if cerr != nil {
			msg += "; compensation failed: " + failure.Line(cerr)
		}
	}
	l.progress.State, l.progress.Outcome, l.progress.Message = state, outcome, msg
	l.progress.Phase, l.progress.PhaseSince = final, workflow.Now(dctx)
	l.endAttempt(dctx, ls, outcome, msg)
	SetSearchState(dctx, state, final)
	Count(dctx, MetricUpdatesEnded, map[string]string{"kind": string(l.progress.Kind), "state": string(state), "outcome": endingOutcome(state, err)})
	if state == StateCancelled {
		return temporal.NewCanceledError(msg)
	}
	return err
}

// endAttempt ends the current attempt in the ledger, once. Failing to write
// the end is logged: the next update of the target releases an attempt
// whose workflow closed (RecordIntent's abandoned check).
func (l *Lifecycle) endAttempt(ctx workflow.Context, s ledger.State, outcome, msg string) {
	if l.Attempt == nil || l.ended {
		return
	}
	f := ledger.Finish{AttemptID: l.Attempt.ID, State: s, Outcome: outcome}
	if s != ledger.StateCompleted {
		f.Error = msg
	}
	var err error
	for {
		if l.prevEnd != nil {
			err = l.writer.(transitionWriter).Transition(ctx, activities.RecordAttemptInput{Finish: l.prevEnd, Next: l.Attempt, FinishNext: &f})
		} else {
			err = l.writer.End(ctx, *l.Attempt, l.recorded, f)
		}
		if l.recorded || !isAttemptEnded(err) {
			break
		}
		// The attempt in doubt had already ended (a reset run): its
		// successor, active or new, is the one this ending ends.
		l.skipEnded(ctx, l.Attempt)
		f.AttemptID = l.Attempt.ID
	}
	if err != nil && !IsTargetBusy(err) {
		workflow.GetLogger(ctx).Error("ledger: could not end the attempt", "attempt", l.Attempt.ID, "error", err)
		return
	}
	l.ended, l.prevEnd = true, nil
}

// attemptWriter writes a kind's attempts to the ledger (ledgerWriter, or a
// kind's own when its ending writes more than the attempt).
type attemptWriter interface {
	// Record writes the intent (idempotent by ID).
	Record(ctx workflow.Context, a ledger.Attempt) error
	// End ends attempt a with f; when recorded is false the intent write
	// was in doubt and a is written (idempotent by ID) and ended at once.
	End(ctx workflow.Context, a ledger.Attempt, recorded bool, f ledger.Finish) error
}

// transitionWriter is an attemptWriter that also writes attempt
// transitions in one idempotent step (end the previous attempt, record the
// next, end it at once; see activities.RecordAttemptInput).
type transitionWriter interface {
	Transition(ctx workflow.Context, in activities.RecordAttemptInput) error
}

var LedgerActs *activities.LedgerActivities

// LedgerWriter writes attempts through LedgerActivities.
type LedgerWriter struct{}

func (LedgerWriter) Record(ctx workflow.Context, a ledger.Attempt) error {
	return LedgerCall(ctx, LedgerActs.RecordIntent, a).Get(ctx, nil)
}

func (LedgerWriter) End(ctx workflow.Context, a ledger.Attempt, recorded bool, f ledger.Finish) error {
	if recorded {
		return LedgerCall(ctx, LedgerActs.FinishAttempt, f).Get(ctx, nil)
	}
	return LedgerWriter{}.Transition(ctx, activities.RecordAttemptInput{Next: &a, FinishNext: &f})
}

func (LedgerWriter) Transition(ctx workflow.Context, in activities.RecordAttemptInput) error {
	return LedgerCall(ctx, LedgerActs.RecordAttempt, in).Get(ctx, nil)
}
