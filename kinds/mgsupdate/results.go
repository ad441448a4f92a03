package mgsupdate

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// A step's result is acted on only when it answers what the workflow
// asked: `temporal activity complete` lets an operator type any result
// ({}, or a made-up "complete"), and acting on one would make the SP look
// updated, or start a second attempt while our delivery runs. Each result
// names the update it is about, and its outcome must be one the step
// gives. A rejected result is recorded in the attempt's ledger log and the
// step is asked again: the steps read the SP before they act (the start
// its send record too: it never sends an attempt twice), as omicron's
// driver re-reads the SP's update status rather than trust an answer it
// lost (nexus/mgs-updates/src/driver_update.rs, wait_for_delivery).

// MaxRejectedResults is how many results of one step the workflow rejects
// before it fails the update ResultRejected: an operator who keeps typing
// a result means the step to stop.
const MaxRejectedResults = 3

// checked runs a step (call) until check accepts its result.
func checked[T any](ctx workflow.Context, u *mgsUpdate, activity string, call func() workflow.Future, check func(T) error) (T, error) {
	for n := 1; ; n++ {
		var out T
		f := call()
		if err := f.Get(ctx, nil); err != nil { // the step's own error: no result decoded
			return out, err
		}
		why := errors.New("the result is not a " + activity + " result") // it does not decode (no more said: it is the operator's text)
		if f.Get(ctx, &out) == nil {
			why = check(out)
		}
		if why == nil {
			return out, nil
		}
		last := n >= MaxRejectedResults
		u.resultRejected(ctx, activity, why, last)
		if last {
			return out, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("%s: %d results rejected, the last: %v", activity, n, why), failure.ResultRejected, nil)
		}
	}
}

// resultRejected appends the rejection to the attempt's ledger log (best
// effort: the step is asked again either way). The message names the
// field that failed, never what the result held: it is the operator's
// text.
func (u *mgsUpdate) resultRejected(ctx workflow.Context, activity string, why error, last bool) {
	u.rejected++
	then := "asked again"
	if last {
		then = "the update fails " + failure.ResultRejected
	}
	// The run's ID keeps a reset run's rejections apart from its
	// original's: each counts from 1 and the ledger keeps a step once.
	run := workflow.GetInfo(ctx).WorkflowExecution.RunID
	e := ledger.Event{AttemptID: u.AttemptID(), Step: "result-rejected-" + strconv.Itoa(u.rejected) + ":" + activity + "@" + run,
		State: "rejected", Message: activity + ": " + why.Error() + "; " + then}
	if err := workflows.LedgerCall(ctx, workflows.LedgerActs.AppendEvent, e).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("could not record a rejected result", "activity", activity, "error", err)
	}
}

// namesUpdate: a result is about update want.
func namesUpdate(got, want uuid.UUID) error {
	switch got {
	case want:
		return nil
	case uuid.Nil:
		return errors.New("the result names no update (ours is " + want.String() + ")")
	}
	return errors.New("the result is about another update than ours, " + want.String())
}

// checkStart accepts a start's result for update id: started, or busy with
// an update the SP reports; a wait it carries is checked as ours.
func checkStart(id uuid.UUID) func(StartUpdateResult) error {
	return func(sr StartUpdateResult) error {
		if err := namesUpdate(sr.UpdateID, id); err != nil {
			return err
		}
		switch {
		case sr.Started == sr.Busy:
			return errors.New("the result says both started and busy, or neither")
		case sr.Busy && !slices.Contains(busyStates, sr.Current.State):
			return errors.New("busy, but with an update state no busy SP reports")
		case sr.Wait != nil:
			return checkWait(id, true)(*sr.Wait)
		}
		return nil
	}
}

// The outcomes a wait gives for our update and for someone else's.
var (
	oursOutcomes    = []string{WaitComplete, WaitLost, WaitReplaced, WaitFailed, WaitAborted, WaitStuck, WaitCheckpoint}
	foreignOutcomes = []string{WaitFree, WaitForeignDone, WaitTakeover, WaitReplaced, WaitStuck, WaitCheckpoint}
)

// checkWait accepts a wait's result for update id: about id, with an
// outcome the wait gives; complete only when the SP reported id complete.
func checkWait(id uuid.UUID, ours bool) func(WaitUpdateResult) error {
	return func(wr WaitUpdateResult) error {
		if err := namesUpdate(wr.UpdateID, id); err != nil {
			return err
		}
		known := foreignOutcomes
		if ours {
			known = oursOutcomes
		}
		if !slices.Contains(known, wr.Outcome) {
			return errors.New("an outcome the wait never gives")
		}
		if wr.Outcome == WaitComplete && (wr.Status.State != mgs.UpdateComplete || wr.Status.ID != id) {
			return errors.New("complete, but the SP's status in the result is not our update complete")
		}
		return nil
	}
}

// checkPost accepts an SP post-update's result for update id: activated
// onto target, or not activated.
func checkPost(id uuid.UUID, target string) func(PostUpdateResult) error {
	return func(pr PostUpdateResult) error {
		if err := namesUpdate(pr.UpdateID, id); err != nil {
			return err
		}
		switch {
		case pr.Outcome != PostActivated && pr.Outcome != PostNotActivated:
			return errors.New("an outcome the post-update never gives")
		case pr.Outcome == PostActivated && pr.Active != target:
			return errors.New("activated, but onto another version than " + target)
		}
		return nil
	}
}

// busyStates are the states of an update that holds the SP.
var busyStates = []mgs.UpdateState{mgs.UpdatePreparing, mgs.UpdateInProgress, mgs.UpdateComplete, mgs.UpdateAborted,
	mgs.UpdateFailed, mgs.UpdateRotError}
