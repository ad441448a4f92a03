package mgsupdate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/internal/version"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// HostFlashInput is one host OS update (docs/CONFORMANCE.md §I):
// phase 2 goes to the disk of the inactive slot through the sled's
// sled-agent, phase 1 to the inactive host-boot-flash slot through MGS.
type HostFlashInput struct {
	Sled   SPTarget `json:"sled"`
	Phase1 Artifact `json:"phase1"`
	Phase2 Artifact `json:"phase2"`
	// SledID names the sled when no Nexus sled table is configured (then
	// its sled-agent is the fleet endpoint sledAgent with this ID); with
	// one, the sled is found by the SP's serial.
	SledID uuid.UUID `json:"sledId,omitzero"`
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
	return validateHostPair("host-flash", in.Sled, in.Phase1, in.Phase2, in.Timing)
}

// validateHostPair checks what a host update and a recovery boot share: a
// sled's SP, a phase 1 and its phase 2, the timing.
func validateHostPair(kind string, sled SPTarget, phase1, phase2 Artifact, timing MGSTiming) error {
	var errs []error
	errs = append(errs, sled.validate(kind+" sled"))
	if sled.Type != "" && sled.Type != mgs.SpTypeSled {
		errs = append(errs, fmt.Errorf("%s sled: only sled SPs have a host (got %q)", kind, sled.Type))
	}
	errs = append(errs, validateArtifact(kind+" phase1", phase1), validateArtifact(kind+" phase2", phase2),
		timing.validate(kind))
	// A phase 1 boots only the phase 2 it names. Its bytes are opaque to
	// us (the pairing lives inside the real phase 1), but a release
	// carries exactly one of each under one host OS version (omicron
	// nexus/reconfigurator/planning/src/mgs_updates/host_phase_1.rs pairs
	// them that way): two versions are not a pair.
	if phase1.Version != "" && phase2.Version != "" && phase1.Version != phase2.Version {
		errs = append(errs, fmt.Errorf("%s: phase 1 version %s and phase 2 version %s are not one release's pair", kind, phase1.Version, phase2.Version))
	}
	return errors.Join(errs...)
}

// HostBootFlashUpdate is the rack's host OS update (omicron's
// host_phase1_updater.rs): it prechecks the slots by their phase 1 hashes
// and the host's boot disk, has sled-agent write phase 2 to the inactive
// slot's disk (hostflash_phase2.go), writes phase 1 to that slot (the MGS
// driver's attempts, as SPFirmwareUpdate's), then makes the slot active,
// resets the SP (which restarts the host) and is done when sled-agent
// reports the new boot disk (hostflash_boot.go).
//
// Cancel: before the slot switch, a cancel aborts our phase 1 update and
// ends the update cancelled, the host untouched on its old OS. After it,
// a cancel puts the host back on its old slot (which still holds the old
// pair) unless the host already runs the new one; then the update ends
// completed with CancelIgnored set. A host that does not come back on the
// new slot in time is put back on the old one and the update fails
// (HostBootTimeout).
func HostBootFlashUpdate(ctx workflow.Context, in HostFlashInput) (MGSUpdateResult, error) {
	if err := in.Validate(); err != nil {
		return MGSUpdateResult{}, temporal.NewNonRetryableApplicationError(err.Error(), failure.InvalidInput, nil)
	}
	u, err := newMGSUpdate(ctx, workflows.KindHostFlash, in.Target(), in.Sled.id(), mgs.ComponentHostBootFlash, in.Phase1,
		in.Timing.withDefaults(hostBootTimeout))
	if err != nil {
		return MGSUpdateResult{}, err
	}
	u.rackRelease = true
	return u.run(ctx, &hostFlash{mgsUpdate: u, in: in})
}

// hostFlash is a sled's host boot flash as a component of the MGS driver.
type hostFlash struct {
	*mgsUpdate
	in HostFlashInput
	// slot is the slot phase 1 goes to: the one inactive at the last
	// precheck.
	slot uint16
	// active is the slot active at the last precheck: the host's old OS,
	// the slot it is put back on.
	active uint16
	// serial is the SP's serial (the sled's baseboard), read by the first
	// precheck: how the sled's sled-agent is found.
	serial string
	// tookOver is the slot our takeover booted the host on (nil: none):
	// its boot already saw sled-agent report that slot's disk.
	tookOver *uint16
}

func (w *hostFlash) firmwareSlot() uint16 { return w.slot }

// precheck reads the slots: the same sled, the target's phase 1 already
// active (complete), never roll back, the slots holding the phase 1
// images the caller expects. After the first precheck the inactive slot
// is not checked (our attempts write it) but the active slot must not
// have moved. Ready: phase 1 goes to the slot
// inactive now. The first precheck also waits for the sled's zones to be
// safe to shut down (checkZoneSafety).
func (w *hostFlash) precheck(ctx workflow.Context, when precheckWhen) (precheckStatus, error) {
	var arts []Artifact
	if when == precheckFirst {
		arts = []Artifact{w.in.Phase1, w.in.Phase2}
	}
	pre, err := w.readDevice(ctx, arts)
	if err != nil {
		return readyForUpdate, err
	}
	if when == precheckFirst {
		w.result.PreviousVersion = hostSlotVersion(pre.Active)
		w.serial = pre.Serial
	}
	if err := checkIdentity(w.in.Sled, pre); err != nil {
		return readyForUpdate, err
	}
	if strings.EqualFold(pre.Active.SHA256, w.in.Phase1.SHA256) {
		return updateComplete, w.confirmBooted(ctx, pre.Active.Slot, when == precheckAfterConcurrent)
	}
	in := w.in
	if when != precheckFirst {
		in.ExpectedInactive = ""
		// Our phase 2 is on the disk of the slot inactive at the first
		// precheck: if someone else's update moved the active slot since,
		// the slot phase 1 would go to boots a disk that never got it
		// (omicron host_phase1_updater.rs: WrongActiveHostPhase1Slot).
		if pre.Active.Slot != w.active {
			return readyForUpdate, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"the active phase 1 slot is %d (%s), was %d at our precheck: another update moved it, and our phase 2 is on the disk of slot %d",
				pre.Active.Slot, hostSlotVersion(pre.Active), w.active, w.slot), failure.WrongActiveSlot, nil, w.active, pre.Active.Slot)
		}
	}
	if err := checkHostSlots(in, pre); err != nil {
		return readyForUpdate, err
	}
	w.slot, w.active = pre.Inactive.Slot, pre.Active.Slot
	if when == precheckFirst {
		return readyForUpdate, w.checkZoneSafety(ctx, "before the update")
	}
	return readyForUpdate, nil
}

// hostSlotVersion names a host boot flash slot: its version when one is
// known, else its phase 1 hash (MGS reports only the hash).
func hostSlotVersion(s SlotInfo) string {
	if s.Version != "" {
		return s.Version
	}
	return s.SHA256
}

// checkHostSlots is the host flash precheck: the slots hold the phase 1
// images the caller expects (by hash), and never roll back where a slot's
// version is known.
func checkHostSlots(in HostFlashInput, pre PrecheckResult) error {
	if pre.Active.Version != "" && version.Compare(pre.Active.Version, in.Phase1.Version, version.MGS) > 0 {
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
