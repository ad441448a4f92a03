package mgsupdate

import (
	"github.com/google/uuid"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// mgsUpdate is the one MGS update driver, omicron's driver_update.rs as a
// workflow: attempts under workflow-generated UUIDs written to the ledger
// before the device sees them (attempts.go), the waits
// (wait.go), someone else's update (concurrent.go), and one
// ending through the shared lifecycle. The kind is a component
// (component.go) that supplies its prechecks and its post-update.
type mgsUpdate struct {
	*workflows.Lifecycle

	kind      workflows.Kind
	target    string
	sp        mgs.SpIdentifier
	component string
	artifact  Artifact
	timing    MGSTiming

	report MGSProgress
	result MGSUpdateResult

	// attempts is the number of the current attempt (its intent written
	// or being written; 0: none yet).
	attempts int
	// abortArmed: the current attempt's abort is registered.
	abortArmed bool
	// note, when set, is a successful ending's message (a cancel that
	// came too late to stop the update).
	note string
	// ending, once set, is the context the rest of the update runs and
	// ends on: a disconnected one, past a point of no return
	// (noTurningBack).
	ending workflow.Context

	// startThenWait (SP firmware): prechecks run as local activities (a
	// few reads and a small image's digest), and the start activity runs
	// the first leg of the wait for our update, which begun holds until
	// wait takes it. Host flash keeps separate activities: its phase 1
	// image is tens of MiB and its start is long.
	startThenWait bool
	begun         *WaitUpdateResult
	// rackRelease (SP firmware, host flash): the device is refused once
	// its rack has a target release, at each precheck, right before each
	// send and (host flash) before its boot slot moves (RackRelease); an
	// SP image once delivered is activated. A host recovery is wicketd's mupdate,
	// the rack's own escape hatch, which Nexus notices and accommodates
	// by suspending its automatic update: it does not ask.
	rackRelease bool
	// rejected counts the step results rejected (results.go), naming
	// each one's ledger step.
	rejected int
}

// mgsEnding says how an MGS update succeeded: the outcome and the device
// update that took effect (none when no change was needed).
type mgsEnding struct {
	outcome string
	update  uuid.UUID
}

var noChangeNeeded = mgsEnding{outcome: MGSOutcomeNoChangeNeeded}

var mgsActs *MGSActivities

func newMGSUpdate(ctx workflow.Context, kind workflows.Kind, target string, sp mgs.SpIdentifier, component string, art Artifact, t MGSTiming) (*mgsUpdate, error) {
	u := &mgsUpdate{kind: kind, target: target, sp: sp, component: component, artifact: art, timing: t}
	u.report.Progress = workflows.Progress{Kind: kind, Target: target, Artifact: art.Version, Unit: "bytes"}
	u.result = MGSUpdateResult{Target: target, Version: art.Version}
	l, err := workflows.NewLifecycle(ctx, &u.report.Progress, MGSPhasePrecheck, workflows.LedgerWriter{}, func() MGSProgress { return u.report })
	u.Lifecycle = l
	return u, err
}

// run drives component c to its target and ends the update.
func (u *mgsUpdate) run(ctx workflow.Context, c mgsComponent) (MGSUpdateResult, error) {
	ok, err := u.drive(ctx, c)
	if u.ending != nil {
		ctx = u.ending
	}
	return u.finish(ctx, ok, err)
}

// drive is the attempt loop. After the first precheck, each attempt gets a
// fresh UUID, its intent in the ledger first; from the second on the
// device is prechecked again. The attempt starts our update (or watches
// someone else's, then prechecks again), waits for it and runs the
// component's post-update. An attempt that did not take effect (lost,
// failed, stuck, aborted, replaced, not activated) is followed by the
// next, up to MaxAttempts.
func (u *mgsUpdate) drive(ctx workflow.Context, c mgsComponent) (mgsEnding, error) {
	if done, err := u.runPrecheck(ctx, c, precheckFirst); err != nil || done {
		return noChangeNeeded, err
	}
	why := ""
	for {
		if err := u.newAttempt(ctx, why); err != nil {
			return mgsEnding{}, err
		}
		if u.attempts > 1 {
			if done, err := u.runPrecheck(ctx, c, precheckNextAttempt); err != nil || done {
				return noChangeNeeded, err
			}
		}
		if p, ok := c.(mgsPreparer); ok {
			if err := p.prepare(ctx); err != nil {
				return mgsEnding{}, err
			}
		}
		if ending, done, err := u.startOrWatch(ctx, c); err != nil || done {
			return ending, err
		}
		wr, err := u.wait(ctx, u.AttemptID(), true)
		if err != nil {
			return mgsEnding{}, err
		}
		if wr.Outcome != WaitComplete {
			why = waitReason(wr)
			continue
		}
		u.Phase(ctx, MGSPhasePostUpdate)
		post, err := c.postUpdate(ctx)
		if err != nil {
			return mgsEnding{}, err
		}
		if post.activated {
			return mgsEnding{MGSOutcomeCompletedUpdate, u.AttemptID()}, nil
		}
		why = post.why
	}
}

// runPrecheck announces the phase and asks the component; done: the device
// runs the target.
func (u *mgsUpdate) runPrecheck(ctx workflow.Context, c mgsComponent, when precheckWhen) (done bool, err error) {
	u.Phase(ctx, MGSPhasePrecheck)
	st, err := c.precheck(ctx, when)
	return err == nil && st == updateComplete, err
}

// startOrWatch starts the current attempt. While someone else's update
// holds the component it watches that update to its end and prechecks
// again: done when the device runs the target now (ending says how it got
// there), else it starts ours.
func (u *mgsUpdate) startOrWatch(ctx workflow.Context, c mgsComponent) (ending mgsEnding, done bool, err error) {
	for {
		sr, err := u.start(ctx, c.firmwareSlot())
		if err != nil || sr.Started {
			return mgsEnding{}, false, err
		}
		other, err := u.watchConcurrent(ctx, c, sr.Current)
		if err != nil {
			return mgsEnding{}, false, err
		}
		if done, err := u.runPrecheck(ctx, c, precheckAfterConcurrent); err != nil || done {
			return mgsEnding{other.outcome(), other.update}, done, err
		}
	}
}

// cancelIgnored notes a cancel that came after the component's point of
// no return: the update was finished instead and ends completed, saying
// why.
func (u *mgsUpdate) cancelIgnored(ctx workflow.Context, why string) {
	if ctx.Err() == nil {
		return
	}
	u.result.CancelIgnored = true
	u.note = why
}

// noTurningBack marks the point of no return of a post-update that a
// cancel must not stop: the rest of the update runs and ends on the
// disconnected context it returns.
func (u *mgsUpdate) noTurningBack(ctx workflow.Context) workflow.Context {
	u.ending, _ = workflow.NewDisconnectedContext(ctx)
	return u.ending
}

// finish ends the update: with ok when err is nil, else failed or
// cancelled, its compensations run (the lifecycle's end). An update that
// ended before its first attempt (no change needed, a failed precheck)
// still leaves a ledger row.
func (u *mgsUpdate) finish(ctx workflow.Context, ok mgsEnding, err error) (MGSUpdateResult, error) {
	if u.attempts == 0 {
		dctx, cancel := workflow.NewDisconnectedContext(ctx)
		defer cancel()
		u.UnwrittenAttempt(u.FreshAttempt(dctx, 1, u.kind, u.target, u.artifact.Version))
		u.result.Attempts = 1
		u.result.AttemptIDs = append(u.result.AttemptIDs, u.AttemptID().String())
	}
	if err == nil {
		u.result.Outcome = ok.outcome
		if ok.update != uuid.Nil {
			u.result.UpdateID = ok.update.String()
		}
	}
	return u.result, u.End(ctx, err, workflows.Ending{Outcome: ok.outcome, Message: u.note, Phase: MGSPhaseDone})
}
