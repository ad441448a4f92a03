package workflows

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// HostFlashInput is one host boot flash update (DESIGN.md §3.2): phase 1
// goes to the inactive host-boot-flash slot, phase 2 is what the host
// fetches through the SP when it boots.
type HostFlashInput struct {
	Sled   SPTarget `json:"sled"`
	Phase1 Artifact `json:"phase1"`
	Phase2 Artifact `json:"phase2"`
	// ExpectedActive / ExpectedInactive, when set, must match the phase 1
	// hashes (SHA-256, hex) of the active and inactive slots: the host boot
	// flash has no caboose, so MGS knows a slot only by its hash.
	ExpectedActive   string    `json:"expectedActive,omitempty"`
	ExpectedInactive string    `json:"expectedInactive,omitempty"`
	Timing           MGSTiming `json:"timing,omitzero"`
}

// HostFlashTarget is the ledger target of a sled's host flash: the sled's
// SP ("sp/sled/12"), the same target as its SP firmware, because the SP
// takes one component update at a time and a host flash resets the SP.
func HostFlashTarget(slot uint16) string { return SPFirmwareTarget(mgs.SpTypeSled, slot) }

// Target implements UpdateInput.
func (in HostFlashInput) Target() string { return HostFlashTarget(in.Sled.Slot) }

// ArtifactVersion implements UpdateInput.
func (in HostFlashInput) ArtifactVersion() string { return in.Phase1.Version }

// Validate implements UpdateInput.
func (in HostFlashInput) Validate() error {
	var errs []error
	errs = append(errs, in.Sled.validate("host-flash sled"))
	if in.Sled.Type != "" && in.Sled.Type != mgs.SpTypeSled {
		errs = append(errs, fmt.Errorf("host-flash sled: only sled SPs have a host (got %q)", in.Sled.Type))
	}
	errs = append(errs, validateArtifact("host-flash phase1", in.Phase1), validateArtifact("host-flash phase2", in.Phase2),
		in.Timing.validate("host-flash"))
	return errors.Join(errs...)
}

// HostBootFlashUpdate prechecks the slots by their phase 1 hashes, writes
// phase 1 to the inactive host boot flash slot (attempts as in
// SPFirmwareUpdate), sets it active with persist, makes the phase 2 image
// available on every MGS, sets phase2_recovery_mode in the SP's startup
// options, power-cycles the host and follows its phase 2 fetch by asking
// every MGS (the freshest record for our image). Done when the host
// fetched it all and the SP reports the new slot active and the host on;
// then the recovery mode is cleared. A bounded wait, else HostBootTimeout.
//
// Cancel: before the power cycle, a cancel aborts our update and ends the
// update cancelled. Once the host was power-cycled onto the new slot it
// boots the new image whatever happens, so a cancel no longer stops the
// update: the boot is followed to its end and the update ends completed
// with CancelIgnored set (changeHostFinishAfterPowerCycle).
func HostBootFlashUpdate(ctx workflow.Context, in HostFlashInput) (MGSUpdateResult, error) {
	if err := in.Validate(); err != nil {
		return MGSUpdateResult{}, temporal.NewNonRetryableApplicationError(err.Error(), failure.InvalidInput, nil)
	}
	u, err := newMGSUpdate(ctx, KindHostFlash, in.Target(), in.Sled.id(), mgs.ComponentHostBootFlash, in.Phase1,
		in.Timing.withDefaults(30*time.Minute))
	if err != nil {
		return MGSUpdateResult{}, err
	}
	w := &hostFlash{mgsUpdate: u, in: in}
	ok, err := w.run(ctx)
	if w.booting != nil {
		ctx = w.booting
	}
	return u.finish(ctx, ok, err)
}

type hostFlash struct {
	*mgsUpdate
	in HostFlashInput
	// booting is set once the host was power-cycled onto the new slot: the
	// disconnected context the rest of the update runs and ends on, because
	// a power cycle is not undone and the host boots the new image whatever
	// the operator does (a cancel waits for HostPostUpdate to stop and asks
	// the SP whether it power-cycled; the update then ends completed with
	// cancelIgnored).
	booting workflow.Context
}

func (w *hostFlash) run(ctx workflow.Context) (mgsEnding, error) {
	pre, err := w.precheck(ctx, []Artifact{w.in.Phase1, w.in.Phase2})
	if err != nil {
		return mgsEnding{}, err
	}
	w.result.PreviousVersion = hostSlotVersion(pre.Active)
	if err := checkIdentity(w.in.Sled, pre); err != nil {
		return mgsEnding{}, err
	}
	if strings.EqualFold(pre.Active.SHA256, w.in.Phase1.SHA256) {
		return noChangeNeeded, nil
	}
	if err := checkHostSlots(w.in, pre); err != nil {
		return mgsEnding{}, err
	}
	newSlot := pre.Inactive.Slot

	why := ""
	for {
		if err := w.newAttempt(ctx, why); err != nil {
			return mgsEnding{}, err
		}
		if w.attempts > 1 {
			slot, done, err := w.recheck(ctx)
			if err != nil {
				return mgsEnding{}, err
			}
			if done {
				return noChangeNeeded, nil
			}
			newSlot = slot
		}
		slot, done, err := w.startOrWait(ctx, newSlot)
		if err != nil {
			return mgsEnding{}, err
		}
		if done {
			return mgsEnding{outcome: MGSOutcomeWaitedConcurrent}, nil
		}
		newSlot = slot
		wr, err := w.wait(ctx, w.attemptID(), true)
		if err != nil {
			return mgsEnding{}, err
		}
		if wr.Outcome != activities.WaitComplete {
			why = waitReason(wr)
			continue
		}

		bctx, err := w.activate(ctx, newSlot)
		if err != nil {
			return mgsEnding{}, err
		}
		if err := w.waitBoot(bctx, newSlot); err != nil {
			return mgsEnding{}, err
		}
		if w.booting != nil && ctx.Err() != nil {
			w.result.CancelIgnored = true
			w.note = "the cancel arrived after the host was power-cycled onto slot " + strconv.Itoa(int(newSlot)) +
				": a power cycle is not undone, so the boot was followed to its end"
		}
		return mgsEnding{MGSOutcomeCompletedUpdate, w.attemptID()}, nil
	}
}

// activate makes phase 2 available on every MGS, sets the new slot active
// (persist) and power-cycles the host. It returns the context to follow
// the boot on: past the power cycle, the disconnected w.booting.
func (w *hostFlash) activate(ctx workflow.Context, slot uint16) (workflow.Context, error) {
	w.phase(ctx, MGSPhasePostUpdate)
	in := activities.HostPostUpdateInput{SP: w.sp, AttemptID: w.attemptID(), NewSlot: slot, Phase2: w.in.Phase2}
	actx := w.longOpts(ctx, 30*time.Minute, "activate the new slot, boot the host")
	// A cancel waits for the power cycle to stop, then asks the SP.
	err := workflow.ExecuteActivity(awaitCancel(actx), mgsActs.HostPostUpdate, in).Get(ctx, nil)
	if err != nil && !w.cycledDespiteCancel(ctx, in, err) {
		return ctx, err
	}
	w.booting, _ = workflow.NewDisconnectedContext(ctx)
	return w.booting, nil
}

// cycledDespiteCancel: a cancel stopped HostPostUpdate, which may have
// power-cycled the host onto the new slot first. The SP says whether it
// did; if so, the host boots the new image and the update goes on.
func (w *hostFlash) cycledDespiteCancel(ctx workflow.Context, in activities.HostPostUpdateInput, err error) bool {
	if !isCancel(ctx, err) {
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

// startOrWait starts the attempt; another update of the host flash (or of
// another component) is waited out first. A host flash accepts a new
// update after a complete one, so there is nothing to take over. The
// slots are read again after the wait: the slot to write is the one
// inactive now, and done says the target is already active.
func (w *hostFlash) startOrWait(ctx workflow.Context, slot uint16) (uint16, bool, error) {
	for {
		sr, err := w.start(ctx, slot)
		if err != nil || sr.Started {
			return slot, false, err
		}
		if _, _, err := w.watchConcurrent(ctx, sr.Current); err != nil {
			return slot, false, err
		}
		next, done, err := w.recheck(ctx)
		if err != nil || done {
			return slot, done, err
		}
		slot = next
	}
}

// recheck reads the host flash slots again: the same sled, the target
// already active (done), or the slot to write (the inactive one now). The
// expected inactive hash is not checked again: our attempts write it.
func (w *hostFlash) recheck(ctx workflow.Context) (uint16, bool, error) {
	w.phase(ctx, MGSPhasePrecheck)
	pre, err := w.precheck(ctx, nil)
	if err != nil {
		return 0, false, err
	}
	if err := checkIdentity(w.in.Sled, pre); err != nil {
		return 0, false, err
	}
	if strings.EqualFold(pre.Active.SHA256, w.in.Phase1.SHA256) {
		return 0, true, nil
	}
	in := w.in
	in.ExpectedInactive = ""
	return pre.Inactive.Slot, false, checkHostSlots(in, pre)
}

// waitBoot follows the host's boot in checkpointed, heartbeating waits.
func (w *hostFlash) waitBoot(ctx workflow.Context, slot uint16) error {
	w.phase(ctx, MGSPhaseHostBoot)
	w.report.Done, w.report.Total = 0, 0
	in := activities.HostWaitBootInput{
		SP: w.sp, AttemptID: w.attemptID(), NewSlot: slot, Phase2SHA256: w.in.Phase2.SHA256,
		Timeout: w.timing.NewVersionTimeout, PollInterval: w.timing.PollInterval, CheckpointEvery: w.timing.CheckpointEvery,
	}
	for n := 0; ; n++ {
		if n >= maxCheckpoints {
			in.CheckpointEvery = 0
		}
		var res activities.HostWaitBootResult
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

// hostSlotVersion names a host boot flash slot: its version when one is
// known, else its phase 1 hash (MGS reports only the hash).
func hostSlotVersion(s activities.SlotInfo) string {
	if s.Version != "" {
		return s.Version
	}
	return s.SHA256
}

// checkHostSlots is the host flash precheck: the slots hold the phase 1
// images the caller expects (by hash), and never roll back where a slot's
// version is known.
func checkHostSlots(in HostFlashInput, pre activities.PrecheckResult) error {
	if pre.Active.Version != "" && CompareVersions(pre.Active.Version, in.Phase1.Version) > 0 {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("active version %s is newer than target %s: never roll back", pre.Active.Version, in.Phase1.Version), failure.WouldDowngrade, nil)
	}
	if in.ExpectedActive != "" && !strings.EqualFold(in.ExpectedActive, pre.Active.SHA256) {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("active slot %d holds phase 1 %s, expected %s", pre.Active.Slot, pre.Active.SHA256, in.ExpectedActive),
			failure.WrongActiveVersion, nil, in.ExpectedActive, pre.Active.SHA256)
	}
	if in.ExpectedInactive != "" && !strings.EqualFold(in.ExpectedInactive, pre.Inactive.SHA256) {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("inactive slot %d holds phase 1 %s, expected %s", pre.Inactive.Slot, pre.Inactive.SHA256, in.ExpectedInactive),
			failure.WrongInactiveVersion, nil, in.ExpectedInactive, pre.Inactive.SHA256)
	}
	return nil
}
