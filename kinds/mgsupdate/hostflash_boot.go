package mgsupdate

import (
	"strconv"

	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// postUpdate activates the written slot and boots the host on it: phase 2
// on every MGS, the slot active with persist, phase2_recovery_mode set,
// a power cycle, then the host's phase 2 fetch followed by asking every
// MGS (the freshest record for our image) until the SP reports the new
// slot active and the host on; then recovery mode is cleared. A bounded
// wait, else HostBootTimeout. Past the power cycle a cancel is ignored:
// the host boots the new image whatever the operator does.
func (w *hostFlash) postUpdate(ctx workflow.Context) (postUpdateStatus, error) {
	bctx, err := w.activate(ctx)
	if err != nil {
		return postUpdateStatus{}, err
	}
	if err := w.waitBoot(bctx); err != nil {
		return postUpdateStatus{}, err
	}
	w.cancelIgnored(ctx, "the cancel arrived after the host was power-cycled onto slot "+strconv.Itoa(int(w.slot))+
		": a power cycle is not undone, so the boot was followed to its end")
	return activated, nil
}

// activate makes phase 2 available on every MGS, sets the new slot active
// (persist) and power-cycles the host. It returns the context to follow
// the boot on: past the power cycle, a disconnected one (noTurningBack).
func (w *hostFlash) activate(ctx workflow.Context) (workflow.Context, error) {
	in := HostPostUpdateInput{SP: w.sp, AttemptID: w.AttemptID(), NewSlot: w.slot, Phase2: w.in.Phase2}
	actx := w.longOpts(ctx, hostActivateBound, "activate the new slot, boot the host")
	// A cancel waits for the power cycle to stop, then asks the SP.
	err := workflow.ExecuteActivity(workflows.AwaitCancel(actx), mgsActs.HostPostUpdate, in).Get(ctx, nil)
	if err != nil && !w.cycledDespiteCancel(ctx, in, err) {
		return ctx, err
	}
	return w.noTurningBack(ctx), nil
}

// cycledDespiteCancel: a cancel stopped HostPostUpdate, which may have
// power-cycled the host onto the new slot first. The SP says whether it
// did; if so, the host boots the new image and the update goes on.
func (w *hostFlash) cycledDespiteCancel(ctx workflow.Context, in HostPostUpdateInput, err error) bool {
	if !workflows.IsCancel(ctx, err) {
		return false
	}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	var cycled bool
	if err := workflow.ExecuteActivity(w.shortOpts(dctx, "was the host power-cycled onto the new slot?"), mgsActs.HostCycledOntoSlot, in).Get(dctx, &cycled); err != nil {
		workflow.GetLogger(ctx).Error("cancelled: could not learn whether the host was power-cycled onto the new slot",
			"slot", in.NewSlot, "error", err)
		return false
	}
	return cycled
}

// waitBoot follows the host's boot in checkpointed, heartbeating waits.
func (w *hostFlash) waitBoot(ctx workflow.Context) error {
	w.Phase(ctx, MGSPhaseHostBoot)
	w.report.Done, w.report.Total = 0, 0
	in := HostWaitBootInput{
		SP: w.sp, AttemptID: w.AttemptID(), NewSlot: w.slot, Phase2SHA256: w.in.Phase2.SHA256,
		Timeout: w.timing.NewVersionTimeout, PollInterval: w.timing.PollInterval, CheckpointEvery: w.timing.CheckpointEvery,
	}
	for n := 0; ; n++ {
		if n >= maxCheckpoints {
			in.CheckpointEvery = 0
		}
		var res HostWaitBootResult
		if err := workflow.ExecuteActivity(w.longOpts(ctx, w.timing.NewVersionTimeout, "follow the phase 2 fetch and the boot"), mgsActs.HostWaitBoot, in).Get(ctx, &res); err != nil {
			return err
		}
		w.report.Done, w.report.Total = int64(res.Offset), int64(res.Total)
		if res.Booted {
			return nil
		}
		in.Since = res.Since
	}
}
