package mgsupdate

import (
	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// concurrentEnd is how someone else's update of the component ended.
type concurrentEnd struct {
	// update is the other update (the last one, when it was replaced).
	update uuid.UUID
	// tookOver: we activated it (takeOver).
	tookOver bool
}

// outcome is the update's outcome when the device runs the target after
// the other update.
func (e concurrentEnd) outcome() string {
	if e.tookOver {
		return MGSOutcomeTookOver
	}
	return MGSOutcomeWaitedConcurrent
}

// watchConcurrent follows someone else's update of the component until the
// component is free, someone activated the update, or — complete and not
// activated within the takeover timeout — we take it over.
func (u *mgsUpdate) watchConcurrent(ctx workflow.Context, c mgsComponent, cur mgs.UpdateStatus) (concurrentEnd, error) {
	u.Phase(ctx, MGSPhaseConcurrent)
	defer func() { u.report.Concurrent = "" }()
	for cur.State != mgs.UpdateNone {
		u.report.Concurrent = cur.ID.String()
		u.report.Message = "another update (" + cur.String() + ") holds the SP: watching it"
		wr, err := u.wait(ctx, cur.ID, false)
		if err != nil {
			return concurrentEnd{update: cur.ID}, err
		}
		switch wr.Outcome {
		case WaitFree, WaitStuck, WaitForeignDone:
			return concurrentEnd{update: cur.ID}, nil
		case WaitReplaced:
			cur = wr.Status
		case WaitTakeover:
			// Declined (not ours to activate, its driver gone): our
			// start writes over it.
			took, err := u.takeOver(ctx, c, cur.ID)
			return concurrentEnd{update: cur.ID, tookOver: took}, err
		default:
			return concurrentEnd{update: cur.ID}, unexpectedWait(wr.Outcome)
		}
	}
	return concurrentEnd{}, nil
}

// takeOver activates the other update, complete but not activated within
// the takeover timeout: whoever drove it is gone.
func (u *mgsUpdate) takeOver(ctx workflow.Context, c mgsComponent, foreign uuid.UUID) (bool, error) {
	t, ok := c.(mgsTakeover)
	if !ok {
		return false, unexpectedWait(WaitTakeover + " of " + u.component)
	}
	u.report.Message = "concurrent update " + foreign.String() + " complete but not activated within " +
		u.timing.TakeoverTimeout.String() + ": taking it over"
	u.Phase(ctx, MGSPhasePostUpdate)
	return t.takeOver(ctx, foreign)
}

func unexpectedWait(outcome string) error {
	return temporal.NewNonRetryableApplicationError("unexpected wait outcome "+outcome, failure.UnexpectedWaitOutcome, nil)
}
