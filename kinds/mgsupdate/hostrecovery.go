package mgsupdate

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// HostRecoveryInput is one recovery boot of a sled's host (wicketd's
// mupdate, docs/CONFORMANCE.md §I): the trampoline's phase 1 written to the
// inactive host-boot-flash slot and booted once, its phase 2 fetched
// through the SP from whichever MGS answers. From the trampoline the
// operator installs the real OS (installinator); this operation ends when
// the host booted the trampoline.
type HostRecoveryInput struct {
	Sled SPTarget `json:"sled"`
	// Phase1 / Phase2 are the trampoline's images: a phase 1 that names
	// the phase 2 (by its header's hash) and that phase 2.
	Phase1 Artifact  `json:"phase1"`
	Phase2 Artifact  `json:"phase2"`
	Timing MGSTiming `json:"timing,omitzero"`
}

// HostRecoveryTarget is the ledger target of a sled's recovery: its SP, as
// for host flash and SP firmware (the SP takes one component update at a
// time, and a recovery and a host flash of one sled must not overlap).
func HostRecoveryTarget(slot uint16) string { return SPFirmwareTarget(mgs.SpTypeSled, slot) }

// Target implements UpdateInput.
func (in HostRecoveryInput) Target() string { return HostRecoveryTarget(in.Sled.Slot) }

// ArtifactVersion implements UpdateInput.
func (in HostRecoveryInput) ArtifactVersion() string { return in.Phase1.Version }

// Validate implements UpdateInput.
func (in HostRecoveryInput) Validate() error {
	return validateHostPair("host-recovery", in.Sled, in.Phase1, in.Phase2, in.Timing)
}

// HostRecovery boots a sled's host on the trampoline over the recovery
// path: precheck (the sled, its slots, both images), the trampoline's
// phase 1 written to the inactive slot through MGS (the driver's
// attempts), then phase 2 uploaded to every reachable MGS, the slot made
// active for one boot (no persist), phase2_recovery_mode set and the host
// power-cycled; the fetch is followed on every MGS, the workflow's
// progress moving at each tenth (hostrecovery_boot.go). Recovery mode is
// cleared once the host booted, or at the timeout.
//
// Failure and cancel: the compensation clears recovery mode and puts the
// next boot back on the installed slot. The persistent slot is never
// written, so the host's next power cycle boots its installed OS.
func HostRecovery(ctx workflow.Context, in HostRecoveryInput) (MGSUpdateResult, error) {
	if err := in.Validate(); err != nil {
		return MGSUpdateResult{}, temporal.NewNonRetryableApplicationError(err.Error(), failure.InvalidInput, nil)
	}
	u, err := newMGSUpdate(ctx, workflows.KindHostRecovery, in.Target(), in.Sled.id(), mgs.ComponentHostBootFlash, in.Phase1,
		in.Timing.withDefaults(hostBootTimeout))
	if err != nil {
		return MGSUpdateResult{}, err
	}
	return u.run(ctx, &hostRecovery{mgsUpdate: u, in: in})
}

// hostRecovery is a recovery boot as a component of the MGS driver.
type hostRecovery struct {
	*mgsUpdate
	in HostRecoveryInput
	// slot gets the trampoline: the slot inactive at the last precheck.
	slot uint16
	// installed is the slot active at the first precheck: the installed
	// OS, which the next boot returns to after a failure or cancel.
	installed uint16
	// phase2ID is the trampoline phase 2's ID at MGS (its header's hash).
	phase2ID string
}

func (w *hostRecovery) firmwareSlot() uint16 { return w.slot }

// precheck reads the sled: the same SP, the images readable (the phase 2
// by its header). A recovery always boots the trampoline: a host already
// running it is booted again, so there is no "complete" (the trampoline
// runs from RAM and leaves no trace the SP reports). After the first
// precheck the installed slot is kept: a later precheck may read the
// trampoline's slot as active (a transient choice not consumed yet).
func (w *hostRecovery) precheck(ctx workflow.Context, when precheckWhen) (precheckStatus, error) {
	var arts []Artifact
	if when == precheckFirst {
		arts = []Artifact{w.in.Phase1, w.in.Phase2}
	}
	pre, err := w.readDevice(ctx, arts)
	if err != nil {
		return readyForUpdate, err
	}
	if err := checkIdentity(w.in.Sled, pre); err != nil {
		return readyForUpdate, err
	}
	if when == precheckFirst {
		w.result.PreviousVersion = hostSlotVersion(pre.Active)
		w.installed, w.phase2ID = pre.Active.Slot, pre.Phase2ID
	}
	w.slot = 1 - w.installed
	return readyForUpdate, nil
}

// hostActivateBound bounds a recovery boot's setup (HostPostUpdate): the
// trampoline phase 2 (hundreds of MiB) uploaded to every MGS, power off,
// the slot and recovery mode set, power on.
const hostActivateBound = 30 * time.Minute
