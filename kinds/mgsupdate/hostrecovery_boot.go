package mgsupdate

import (
	"fmt"
	"strconv"

	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// postUpdate boots the host on the trampoline: phase 2 on every MGS, the
// slot active for one boot, recovery mode, a power cycle (recoveryBoot);
// then the fetch followed to the boot (followFetch). Once the host booted
// there is nothing to undo: recovery mode is cleared and the persistent
// slot was never touched.
func (w *hostRecovery) postUpdate(ctx workflow.Context) (postUpdateStatus, error) {
	if err := w.recoveryBoot(ctx); err != nil {
		return postUpdateStatus{}, err
	}
	if err := w.followFetch(ctx); err != nil {
		return postUpdateStatus{}, err
	}
	w.NothingToUndo()
	return activated, nil
}

// recoveryBoot is HostPostUpdate with a transient slot. Its undo,
// registered first, clears what it sets; a cancel waits for it to stop,
// then the undo runs. (Before it nothing is to undo but the driver's abort
// of our phase 1 write: the trampoline in the inactive slot is inert.)
func (w *hostRecovery) recoveryBoot(ctx workflow.Context) error {
	w.Phase(ctx, MGSPhaseHostBoot)
	w.BeforeAction("clear recovery mode, next boot on the installed slot", w.restore)
	in := HostPostUpdateInput{SP: w.sp, AttemptID: w.AttemptID(), NewSlot: w.slot, Phase2: w.in.Phase2, Transient: true}
	actx := workflows.AwaitCancel(w.longOpts(ctx, hostActivateBound, "phase 2 on every MGS, slot "+strconv.Itoa(int(w.slot))+" for one boot, recovery mode, power cycle"))
	return workflow.ExecuteActivity(actx, mgsActs.HostPostUpdate, in).Get(ctx, nil)
}

// followFetch follows the host's phase 2 fetch on every MGS in one
// activity: its progress reaches the workflow at each tenth (the
// activity's ProgressReporter signals), so the history grows with the
// tenths, not with the fetch's duration.
func (w *hostRecovery) followFetch(ctx workflow.Context) error {
	w.Phase(ctx, MGSPhaseRecoveryFetch)
	w.report.Done, w.report.Total = 0, 0
	in := HostWaitBootInput{
		SP: w.sp, AttemptID: w.AttemptID(), NewSlot: w.slot, Phase2ID: w.phase2ID, Transient: true,
		Timeout: w.timing.NewVersionTimeout, Since: workflow.Now(ctx), PollInterval: w.timing.PollInterval,
	}
	var res HostWaitBootResult
	err := workflow.ExecuteActivity(workflows.AwaitCancel(w.longOpts(ctx, w.timing.NewVersionTimeout, "follow the phase 2 fetch and the boot")),
		mgsActs.HostWaitBoot, in).Get(ctx, &res)
	if err != nil {
		return err
	}
	w.report.Done, w.report.Total = int64(res.Offset), int64(res.Total)
	return nil
}

// restore is the recovery's compensation (HostRecoveryRestore).
func (w *hostRecovery) restore(ctx workflow.Context) error {
	in := HostRecoveryRestoreInput{SP: w.sp, AttemptID: w.AttemptID(), Installed: w.installed}
	err := workflow.ExecuteActivity(w.shortOpts(ctx, "clear recovery mode"), mgsActs.HostRecoveryRestore, in).Get(ctx, nil)
	if err == nil {
		w.Undone(fmt.Sprintf("recovery mode cleared; the next boot uses slot %d, the installed OS", w.installed))
	}
	return err
}
