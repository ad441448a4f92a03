package mgsupdate

import (
	"fmt"
	"strings"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/internal/version"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// The SP's resets: the post-update that activates our update, and the
// takeover that activates someone else's.

// postUpdate resets the SP onto our complete update and waits for the new
// version. A complete update cannot be aborted, and left unactivated the
// next reset by anyone would activate it: a cancel during the reset waits
// for it to stop, and the activation is then followed to its end on a
// disconnected context (chaos seed 3).
func (w *spFirmware) postUpdate(ctx workflow.Context) (postUpdateStatus, error) {
	id, target := w.AttemptID(), w.in.Artifact.Version
	pr, err := w.reset(ctx, id, target, false)
	if err != nil && workflows.IsCancel(ctx, err) {
		dctx, cancel := workflow.NewDisconnectedContext(ctx)
		defer cancel()
		pr, err = w.reset(dctx, id, target, false)
	}
	if err != nil {
		return postUpdateStatus{}, err
	}
	if pr.Outcome != PostActivated {
		return notActivated("update " + id.String() + " complete but the SP came back running " + pr.Active), nil
	}
	w.cancelIgnored(ctx, "the cancel arrived after update "+id.String()+
		" was complete on the SP: a complete update is not aborted, so the SP was reset to activate it")
	if pr.Release != nil {
		w.result.TargetReleaseAppeared = pr.Release.Version
		w.note = strings.TrimPrefix(w.note+"; "+releaseAppearedNote(id, *pr.Release), "; ")
	}
	return activated, nil
}

// takeOver resets the SP onto someone else's complete update, unless what
// it wrote is older than what the SP runs.
func (w *spFirmware) takeOver(ctx workflow.Context, foreign uuid.UUID) (bool, error) {
	pre, err := w.readDevice(ctx, nil)
	if err != nil {
		return false, err
	}
	if pre.Inactive.Valid && pre.Active.Valid && version.Compare(pre.Inactive.Version, pre.Active.Version, version.MGS) < 0 {
		return false, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("concurrent update %s wrote %s, older than the active %s, and nobody reset the SP: taking it over would roll back",
				foreign, pre.Inactive.Version, pre.Active.Version), failure.ConcurrentDowngrade, nil)
	}
	pr, err := w.reset(ctx, foreign, slotVersion(pre.Inactive), true)
	return err == nil && pr.Outcome == PostActivated, err
}

// reset resets the SP to activate update id and waits for version want
// (a lost reset reply is re-checked, never repeated). A cancel waits for
// the reset to stop. A takeover (someone else's update) is refused if the
// rack has a target release; our own delivered update is activated
// whatever the rack's release, which is only noted (refuseBeforeSend says
// why).
func (w *spFirmware) reset(ctx workflow.Context, id uuid.UUID, want string, takeover bool) (PostUpdateResult, error) {
	actx := workflows.AwaitCancel(w.longOpts(ctx, resetTries*w.timing.NewVersionTimeout, "reset, wait for the new version"))
	in := PostUpdateInput{
		SP: w.sp, Serial: w.in.SP.Serial, RackRelease: takeover, NoteRelease: !takeover, UpdateID: id, AttemptID: w.AttemptID(), TargetVersion: want,
		ResetRetryInterval: w.timing.ResetRetryInterval, NewVersionTimeout: w.timing.NewVersionTimeout,
		PollInterval: w.timing.PollInterval,
	}
	return checked(ctx, w.mgsUpdate, "SPPostUpdate", func() workflow.Future {
		return workflow.ExecuteActivity(actx, mgsActs.SPPostUpdate, in)
	}, checkPost(id, want))
}
