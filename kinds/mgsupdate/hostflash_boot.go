package mgsupdate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// postUpdate boots the host on the written slot: the slot active with
// persist, the SP reset (it restarts the host), done when sled-agent
// reports the new boot disk, once the sled's zones are safe to shut down
// (checkZoneSafety). Its undo, registered first, puts the host
// back on the old slot (which still holds the old phase 1 and phase 2):
// it runs when the host does not come back in time (HostBootTimeout) and
// on a cancel, unless the host already runs the new slot.
func (w *hostFlash) postUpdate(ctx workflow.Context) (postUpdateStatus, error) {
	return w.boot(ctx, true)
}

// boot is postUpdate; revert registers the undo that puts the host back
// on the old slot (our own update only).
func (w *hostFlash) boot(ctx workflow.Context, revert bool) (postUpdateStatus, error) {
	w.Phase(ctx, MGSPhaseHostBoot)
	if err := w.checkZoneSafety(ctx, "before the reboot"); err != nil {
		return postUpdateStatus{}, err
	}
	old := w.active
	if revert {
		w.BeforeAction("put the host back on slot "+strconv.Itoa(int(old)), func(ctx workflow.Context) error {
			err := workflow.ExecuteActivity(w.longOpts(ctx, w.timing.NewVersionTimeout, "put the host back on slot "+strconv.Itoa(int(old))),
				mgsActs.HostBootSlot, w.bootInput(ctx, old, "restore")).Get(ctx, nil)
			if err == nil {
				w.Undone(fmt.Sprintf("host put back on phase 1 slot %d, its old OS", old))
			}
			return err
		})
	}
	in := w.bootInput(ctx, w.slot, "activate")
	in.RackRelease = true
	actx := workflows.AwaitCancel(w.longOpts(ctx, w.timing.NewVersionTimeout, "make slot "+strconv.Itoa(int(w.slot))+" active, reset the SP, wait for the host on it"))
	err := workflow.ExecuteActivity(actx, mgsActs.HostBootSlot, in).Get(ctx, nil)
	if err != nil {
		if !workflows.IsCancel(ctx, err) || !w.bootedDespiteCancel(ctx, in) {
			return postUpdateStatus{}, err
		}
		w.noTurningBack(ctx)
		w.cancelIgnored(ctx, "the cancel arrived after the host had booted slot "+strconv.Itoa(int(w.slot))+
			" with the new OS: a host running the new OS is not rolled back")
	}
	w.NothingToUndo()
	return activated, nil
}

// takeOver boots the host on someone else's complete phase 1 update, not
// activated within the takeover timeout (its driver is gone), as omicron's
// driver does (nexus/mgs-updates/src/driver_update.rs, apply_update: the
// post-update of the request, here the slot made active and one SP
// reset). Only an update that wrote our phase 1 to the slot whose disk
// got our phase 2 is taken over; another is not activated (false). That
// slot may already be active with the host not booted on it: the other
// driver set it and died before its SP reset (omicron waits out
// MismatchedHostOsActiveSlot, then resets). The host is not put back
// when the boot fails: omicron's driver never reverts (ResetTimeoutError,
// the host left on the slot the update activated).
func (w *hostFlash) takeOver(ctx workflow.Context, foreign uuid.UUID) (bool, error) {
	pre, err := w.readDevice(ctx, nil)
	if err != nil {
		return false, err
	}
	written := pre.Active.Slot == w.active && pre.Inactive.Slot == w.slot && strings.EqualFold(pre.Inactive.SHA256, w.in.Phase1.SHA256)
	if !written {
		if pre.Active.Slot != w.slot || !strings.EqualFold(pre.Active.SHA256, w.in.Phase1.SHA256) {
			return false, nil
		}
		var booted bool
		if err := workflow.ExecuteActivity(w.shortOpts(ctx, "does the host run the active slot?"), mgsActs.HostBootedOn,
			w.bootInput(ctx, w.slot, "check")).Get(ctx, &booted); err != nil || booted {
			return false, err
		}
	}
	st, err := w.boot(ctx, false)
	if err == nil && st.activated {
		slot := w.slot
		w.tookOver = &slot
	}
	return err == nil && st.activated, err
}

// bootInput boots the host on slot, within the host's boot timeout from
// now.
func (w *hostFlash) bootInput(ctx workflow.Context, slot uint16, why string) HostBootInput {
	return HostBootInput{
		SP: w.sp, Serial: w.serial, SledID: w.in.SledID, AttemptID: w.AttemptID(), Slot: slot, Why: why,
		Deadline: workflow.Now(ctx).Add(w.timing.NewVersionTimeout), PollInterval: w.timing.PollInterval,
	}
}

// bootedDespiteCancel: a cancel stopped the boot; sled-agent says whether
// the host already runs the new slot (then the update is complete).
func (w *hostFlash) bootedDespiteCancel(ctx workflow.Context, in HostBootInput) bool {
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	var booted bool
	if err := workflow.ExecuteActivity(w.shortOpts(dctx, "does the host run the new slot?"), mgsActs.HostBootedOn, in).Get(dctx, &booted); err != nil {
		workflow.GetLogger(ctx).Error("cancelled: could not learn whether the host runs the new slot; putting it back", "slot", in.Slot, "error", err)
		return false
	}
	return booted
}

// confirmBooted: the target is active on slot; the host must run from
// that slot's disk too, else a reboot is pending (omicron's precheck:
// MismatchedHostOsActiveSlot). After someone else's update (wait) the
// host it restarted may still be booting: that is waited for, within the
// host's boot timeout.
func (w *hostFlash) confirmBooted(ctx workflow.Context, slot uint16, wait bool) error {
	if wait && w.tookOver != nil && *w.tookOver == slot {
		// Our takeover's boot of this slot saw sled-agent report its disk.
		return nil
	}
	in := w.bootInput(ctx, slot, "check")
	actx := w.shortOpts(ctx, "does the host run the active slot?")
	if wait {
		in.WaitBooted = true
		actx = w.longOpts(ctx, w.timing.NewVersionTimeout, "wait for the host to run the active slot")
	}
	var booted bool
	if err := workflow.ExecuteActivity(actx, mgsActs.HostBootedOn, in).Get(ctx, &booted); err != nil {
		return err
	}
	if !booted {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"phase 1 slot %d holds the target and is active, but the host does not run from its disk: a reboot is pending (another update in flight?)", slot),
			failure.HostBootDiskMismatch, nil)
	}
	return nil
}
