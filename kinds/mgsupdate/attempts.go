package mgsupdate

import (
	"fmt"
	"strconv"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// newAttempt starts the next attempt: after a pause, it ends the current
// attempt as failed (why) and records the next one's intent under a fresh
// workflow-generated UUID, in one ledger write. The UUID is also the
// update ID the device sees.
func (u *mgsUpdate) newAttempt(ctx workflow.Context, why string) error {
	if u.attempts >= u.timing.MaxAttempts {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%d attempts failed; last: %s", u.attempts, why), failure.AttemptsExhausted, nil)
	}
	if u.attempts > 0 && u.timing.AttemptDelay > 0 {
		// The pause shows in the progress query only: the Web UI keeps the
		// failed attempt's phase.
		u.QuietPhase(ctx, MGSPhaseAttemptPause)
		u.report.Message = "attempt " + strconv.Itoa(u.attempts) + " failed (" + why + "); next attempt after " + u.timing.AttemptDelay.String()
		if err := workflow.Sleep(ctx, u.timing.AttemptDelay); err != nil {
			return err
		}
	}
	u.attempts++ // before the write: a write in doubt is this attempt's
	if err := u.NextAttempt(ctx, u.FreshAttempt(ctx, u.attempts, u.kind, u.target, u.artifact.Version), why); err != nil {
		return err
	}
	u.attempts = u.Attempt.Attempt // past those a reset run finds ended
	id := u.AttemptID()
	// The previous attempt's update is over on the SP (lost, failed,
	// aborted, or complete but not activated): nothing of it to abort.
	u.NothingToUndo()
	u.abortArmed = false
	u.result.Attempts = u.attempts
	u.result.AttemptIDs = append(u.result.AttemptIDs, id.String())
	u.report.Attempt, u.report.AttemptID = u.attempts, id.String()
	u.report.Done, u.report.Total, u.report.Message = 0, 0, ""
	return nil
}

// start sends the image under the current attempt's UUID. Its undo, the
// abort of our update, is registered before the image is sent, and a
// cancel waits for the start to stop, so an update MGS accepts after a
// cancel is still aborted.
func (u *mgsUpdate) start(ctx workflow.Context, fwSlot uint16) (StartUpdateResult, error) {
	u.Phase(ctx, MGSPhaseUpdating)
	in := StartUpdateInput{
		SP: u.sp, Component: u.component, FirmwareSlot: fwSlot, UpdateID: u.AttemptID(), Artifact: u.artifact,
		PollInterval: u.timing.PollInterval, RackRelease: u.rackRelease,
	}
	bound, step := startBound, "start the update"
	if u.startThenWait {
		// No decision lies between an accepted start and the wait.
		w := u.waitInput(u.AttemptID(), true)
		in.ThenWait = &w
		bound, step = bound+u.waitBound(), "start the update, wait for it"
	}
	u.beforeStart()
	actx := workflows.AwaitCancel(u.longOpts(ctx, bound, step))
	sr, err := checked(ctx, u, "MGSStartUpdate", func() workflow.Future {
		return workflow.ExecuteActivity(actx, mgsActs.MGSStartUpdate, in)
	}, checkStart(in.UpdateID))
	if err != nil {
		return sr, err
	}
	u.begun = sr.Wait
	return sr, nil
}

// beforeStart registers, once per attempt, the compensation of its start:
// abort our update by its ID (the SP's state says whether it was ours to
// abort, so it is safe when the start never reached the SP).
func (u *mgsUpdate) beforeStart() {
	if u.abortArmed {
		return
	}
	u.abortArmed = true
	id := u.AttemptID()
	u.BeforeAction("abort update "+id.String(), func(ctx workflow.Context) error {
		var res string
		err := workflow.ExecuteActivity(u.abortOpts(ctx), mgsActs.MGSAbortUpdate, AbortInput{
			SP: u.sp, Component: u.component, UpdateID: id, AttemptID: id, Reason: "update cancelled",
		}).Get(ctx, &res)
		if err == nil {
			u.Undone("abort " + id.String() + ": " + res)
		}
		return err
	})
}
