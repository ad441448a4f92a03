package mgsupdate

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/workflows"
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
// phase 1 to the inactive host boot flash slot (the MGS driver's attempts,
// as SPFirmwareUpdate's), then activates it and follows the host's boot
// (hostflash_boot.go). This kind supplies the precheck and the
// post-update.
//
// Cancel: before the power cycle, a cancel aborts our update and ends the
// update cancelled. Once the host was power-cycled onto the new slot it
// boots the new image whatever happens, so a cancel no longer stops the
// update: the boot is followed to its end and the update ends completed
// with CancelIgnored set.
func HostBootFlashUpdate(ctx workflow.Context, in HostFlashInput) (MGSUpdateResult, error) {
	if err := in.Validate(); err != nil {
		return MGSUpdateResult{}, temporal.NewNonRetryableApplicationError(err.Error(), failure.InvalidInput, nil)
	}
	u, err := newMGSUpdate(ctx, workflows.KindHostFlash, in.Target(), in.Sled.id(), mgs.ComponentHostBootFlash, in.Phase1,
		in.Timing.withDefaults(hostBootTimeout))
	if err != nil {
		return MGSUpdateResult{}, err
	}
	return u.run(ctx, &hostFlash{mgsUpdate: u, in: in})
}

// hostFlash is a sled's host boot flash as a component of the MGS driver.
type hostFlash struct {
	*mgsUpdate
	in HostFlashInput
	// slot is the slot phase 1 goes to: the one inactive at the last
	// precheck.
	slot uint16
}

func (w *hostFlash) firmwareSlot() uint16 { return w.slot }

// precheck reads the slots: the same sled, the target's phase 1 already
// active (complete), never roll back, the slots holding the phase 1
// images the caller expects. After the first precheck the inactive slot
// is not checked: our attempts write it. Ready: phase 1 goes to the slot
// inactive now.
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
	}
	if err := checkIdentity(w.in.Sled, pre); err != nil {
		return readyForUpdate, err
	}
	if strings.EqualFold(pre.Active.SHA256, w.in.Phase1.SHA256) {
		return updateComplete, nil
	}
	in := w.in
	if when != precheckFirst {
		in.ExpectedInactive = ""
	}
	if err := checkHostSlots(in, pre); err != nil {
		return readyForUpdate, err
	}
	w.slot = pre.Inactive.Slot
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
