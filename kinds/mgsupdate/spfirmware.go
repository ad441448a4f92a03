package mgsupdate

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/internal/version"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// SPFirmwareInput is one SP firmware update.
type SPFirmwareInput struct {
	SP       SPTarget `json:"sp"`
	Artifact Artifact `json:"artifact"`
	// ExpectedActive / ExpectedInactive, when set, must match the SP's
	// active and inactive versions (NoValidVersion: no valid image).
	ExpectedActive   string    `json:"expectedActive,omitempty"`
	ExpectedInactive string    `json:"expectedInactive,omitempty"`
	Timing           MGSTiming `json:"timing,omitzero"`
}

// SPFirmwareTarget is the ledger target of an SP ("sp/sled/12").
func SPFirmwareTarget(t mgs.SpType, slot uint16) string {
	return "sp/" + string(t) + "/" + strconv.Itoa(int(slot))
}

// Target implements UpdateInput.
func (in SPFirmwareInput) Target() string { return SPFirmwareTarget(in.SP.Type, in.SP.Slot) }

// ArtifactVersion implements UpdateInput.
func (in SPFirmwareInput) ArtifactVersion() string { return in.Artifact.Version }

// Validate implements UpdateInput.
func (in SPFirmwareInput) Validate() error {
	return errors.Join(in.SP.validate("sp-firmware sp"), validateArtifact("sp-firmware artifact", in.Artifact),
		in.Timing.validate("sp-firmware"))
}

// newVersionTimeout: how soon the SP must come back on the new version.
func (in SPFirmwareInput) newVersionTimeout() time.Duration {
	if in.SP.Type == mgs.SpTypeSwitch {
		return switchNewVersionTimeout
	}
	return spNewVersionTimeout
}

// SPFirmwareUpdate updates one SP's firmware through MGS: verify the
// artifact, precheck (identity, versions, never roll back), then attempts
// until the SP runs the new version: intent in the ledger under a fresh
// UUID, start via any MGS, wait (one heartbeating activity), reset (via the
// other MGS if one refuses), wait for the new version. A concurrent update
// is watched, and taken over when it completes and nobody resets it. The
// attempts are the MGS driver's (driver.go); this kind supplies its
// precheck, post-update and takeover.
func SPFirmwareUpdate(ctx workflow.Context, in SPFirmwareInput) (MGSUpdateResult, error) {
	if err := in.Validate(); err != nil {
		return MGSUpdateResult{}, temporal.NewNonRetryableApplicationError(err.Error(), failure.InvalidInput, nil)
	}
	u, err := newMGSUpdate(ctx, workflows.KindSPFirmware, in.Target(), in.SP.id(), mgs.ComponentSP, in.Artifact,
		in.Timing.withDefaults(in.newVersionTimeout()))
	if err != nil {
		return MGSUpdateResult{}, err
	}
	u.startThenWait, u.rackRelease = true, true
	return u.run(ctx, &spFirmware{mgsUpdate: u, in: in})
}

// spFirmware is the SP as a component of the MGS driver.
type spFirmware struct {
	*mgsUpdate
	in SPFirmwareInput
}

// firmwareSlot: 0 names the SP's inactive slot (the SP's two slots have
// no labels of their own).
func (w *spFirmware) firmwareSlot() uint16 { return 0 }

// precheck: the same SP, not already at the target (complete), never
// newer, the active and inactive versions as expected. Attempts 2..N do
// not check the inactive slot: our earlier attempts wrote it. After
// someone else's update only where it left the SP counts: at the target,
// newer (never roll back), not the expected active version, or still
// older (ours is needed).
func (w *spFirmware) precheck(ctx workflow.Context, when precheckWhen) (precheckStatus, error) {
	var arts []Artifact
	if when == precheckFirst {
		arts = []Artifact{w.in.Artifact}
	}
	pre, err := w.readDevice(ctx, arts)
	if err != nil {
		return readyForUpdate, err
	}
	target := w.in.Artifact.Version
	atTarget := pre.Active.Valid && pre.Active.Version == target
	switch when {
	case precheckFirst:
		w.result.PreviousVersion = slotVersion(pre.Active)
	case precheckAfterConcurrent:
		if atTarget {
			return updateComplete, nil
		}
		if pre.Active.Valid && version.Compare(pre.Active.Version, target, version.MGS) > 0 {
			return readyForUpdate, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("a concurrent update moved the SP to %s, newer than target %s: never roll back", pre.Active.Version, target),
				failure.WouldDowngrade, nil)
		}
		// The caller's expected active version holds after it too: a
		// concurrent update that left a third version fails the update
		// (omicron driver_update.rs, wait_for_update_done:
		// WrongActiveVersion is not waited out).
		return readyForUpdate, checkVersions(target, w.in.ExpectedActive, "", pre)
	}
	if err := checkIdentity(w.in.SP, pre); err != nil {
		return readyForUpdate, err
	}
	if atTarget {
		return updateComplete, nil
	}
	expectedInactive := w.in.ExpectedInactive
	if when == precheckNextAttempt {
		expectedInactive = ""
	}
	return readyForUpdate, checkVersions(target, w.in.ExpectedActive, expectedInactive, pre)
}

// checkVersions applies the version prechecks: never roll back, and the
// active and inactive versions are what the caller expects (when given).
func checkVersions(target, expectedActive, expectedInactive string, pre PrecheckResult) error {
	active := slotVersion(pre.Active)
	if pre.Active.Valid && version.Compare(pre.Active.Version, target, version.MGS) > 0 {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("active version %s is newer than target %s: never roll back", pre.Active.Version, target), failure.WouldDowngrade, nil)
	}
	if expectedActive != "" && expectedActive != active {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("active version: expected %s, found %s", expectedActive, active), failure.WrongActiveVersion, nil, expectedActive, active)
	}
	if inactive := slotVersion(pre.Inactive); expectedInactive != "" && expectedInactive != inactive {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("inactive version: expected %s, found %s", expectedInactive, inactive), failure.WrongInactiveVersion, nil, expectedInactive, inactive)
	}
	return nil
}

func slotVersion(s SlotInfo) string {
	if !s.Valid {
		return NoValidVersion
	}
	return s.Version
}
