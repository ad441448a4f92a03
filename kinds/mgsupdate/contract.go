// Package mgsupdate is the home of the two kinds MGS updates: SP firmware
// (spfirmware*.go) and host flash (hostflash*.go). Both are one driver
// (driver.go, in the shape of omicron's nexus/mgs-updates: attempts.go,
// concurrent.go, wait.go; its timings in timing.go and options.go), to
// which a kind supplies only its precheck and post-update (component.go).
// contract.go is what both share (target, artifact, phases, result); the
// MGS activities are activities*.go, the dry runs plan.go.
package mgsupdate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// This file is the contract of the two MGS update kinds (SPFirmwareUpdate,
// HostBootFlashUpdate): what they target, their phases, outcomes and
// result; their timings are in timing.go. Their one driver is
// mgsUpdate (driver.go), each kind a component of it
// (component.go).

// SPTarget names an SP and what it must be.
type SPTarget struct {
	Type mgs.SpType `json:"type"`
	Slot uint16     `json:"slot"`
	// Serial is the expected serial number (identity check).
	Serial string `json:"serial"`
	// Part, when set, is the expected part number (MGS "model").
	Part string `json:"part,omitempty"`
}

func (t SPTarget) id() mgs.SpIdentifier { return mgs.SpIdentifier{Type: t.Type, Slot: t.Slot} }

func (t SPTarget) validate(what string) error {
	var errs []error
	if !t.Type.Valid() {
		errs = append(errs, fmt.Errorf("%s: type %q is not sled, switch or power", what, t.Type))
	}
	if strings.TrimSpace(t.Serial) == "" {
		errs = append(errs, fmt.Errorf("%s: serial is required (identity check)", what))
	}
	return errors.Join(errs...)
}

// Artifact is an image: version, SHA-256 (hex) and where workers read it.
type Artifact = ArtifactRef

func validateArtifact(what string, a Artifact) error {
	var errs []error
	if a.Version == "" {
		errs = append(errs, fmt.Errorf("%s: version is required", what))
	}
	if len(a.SHA256) != 64 || strings.Trim(strings.ToLower(a.SHA256), "0123456789abcdef") != "" {
		errs = append(errs, fmt.Errorf("%s: sha256 must be 64 hex digits", what))
	}
	if (a.Path == "") == (a.URL == "") {
		errs = append(errs, fmt.Errorf("%s: exactly one of path and url is required", what))
	}
	return errors.Join(errs...)
}

// NoValidVersion as an expected inactive version means "the inactive slot
// holds no valid image" (its caboose does not read).
const NoValidVersion = "invalid"

// MGS update phases, in the order the driver announces them (progress
// query, search attribute, ledger), after omicron's UpdateAttemptStatus.
const (
	MGSPhasePrecheck      workflows.Phase = "precheck"                      // read the device and decide (each attempt)
	MGSPhaseHostPhase2    workflows.Phase = "phase2-to-disk"                // host flash: sled-agent writes phase 2 to the inactive slot's disk
	MGSPhaseUpdating      workflows.Phase = "updating"                      // send our image, wait for it
	MGSPhaseConcurrent    workflows.Phase = "waiting-for-concurrent-update" // someone else's update holds the component
	MGSPhasePostUpdate    workflows.Phase = "post-update"                   // make a complete update take effect
	MGSPhaseHostBoot      workflows.Phase = "host-boot"                     // host flash: activate the slot, reset, wait for sled-agent on it; host recovery: set up the recovery boot, power cycle
	MGSPhaseRecoveryFetch workflows.Phase = "phase2-fetch"                  // host recovery: the host fetches the trampoline's phase 2 through the SP
	MGSPhaseAttemptPause  workflows.Phase = "attempt-pause"                 // between attempts
	MGSPhaseDone          workflows.Phase = "done"
)

func init() {
	workflows.DeclarePhases([]workflows.Phase{MGSPhasePrecheck, MGSPhaseHostPhase2, MGSPhaseUpdating, MGSPhaseConcurrent, MGSPhasePostUpdate, MGSPhaseHostBoot,
		MGSPhaseRecoveryFetch, MGSPhaseAttemptPause, MGSPhaseDone},
		MGSPhaseHostPhase2, MGSPhaseUpdating, MGSPhaseConcurrent, MGSPhaseHostBoot, MGSPhaseRecoveryFetch)
}

// How an MGS update succeeded (the result's and the ledger's outcome).
const (
	MGSOutcomeNoChangeNeeded   = "FoundNoChangesNeeded"
	MGSOutcomeCompletedUpdate  = "CompletedUpdate"
	MGSOutcomeWaitedConcurrent = "WaitedForConcurrentUpdate"
	MGSOutcomeTookOver         = "TookOverConcurrentUpdate"
)

// MGSUpdateResult says how an SP firmware or host flash update ended.
type MGSUpdateResult struct {
	// Outcome is one of the MGSOutcome* values.
	Outcome string `json:"outcome"`
	Target  string `json:"target"`
	Version string `json:"version"`
	// PreviousVersion is the active version found by the precheck.
	PreviousVersion string `json:"previousVersion,omitempty"`
	Attempts        int    `json:"attempts"`
	// AttemptIDs are this update's attempt UUIDs (ledger IDs; each one
	// that reached the device is also its MGS update ID).
	AttemptIDs []string `json:"attemptIds,omitempty"`
	// UpdateID is the device update that took effect (ours, or the
	// concurrent one we waited for or took over).
	UpdateID string `json:"updateId,omitempty"`
	// CancelIgnored: a cancel arrived after the host was power-cycled onto
	// the new slot; a power cycle is not undone, so the boot was followed
	// to its end instead (host flash).
	CancelIgnored bool `json:"cancelIgnored,omitempty"`
	// TargetReleaseAppeared is a target release the SP's rack got while
	// our image was delivered: the SP was reset to activate it anyway
	// (a delivered image is armed), and Nexus now updates it toward this.
	TargetReleaseAppeared string `json:"targetReleaseAppeared,omitempty"`
}

// MGSProgress is the progress query's answer: the common Progress plus the
// attempt and device update IDs.
type MGSProgress struct {
	workflows.Progress
	AttemptID string `json:"attemptId,omitempty"`
	// Concurrent is the foreign update being watched, if any.
	Concurrent string `json:"concurrent,omitempty"`
}

// digestOf is an artifact as an approval binds it (workflows.Delivers).
func digestOf(name string, a Artifact) workflows.ArtifactDigest {
	return workflows.ArtifactDigest{Name: name, Version: a.Version, SHA256: strings.ToLower(a.SHA256)}
}

// Artifacts implements workflows.Delivers.
func (in SPFirmwareInput) Artifacts() []workflows.ArtifactDigest {
	return []workflows.ArtifactDigest{digestOf("artifact", in.Artifact)}
}

// Artifacts implements workflows.Delivers.
func (in HostFlashInput) Artifacts() []workflows.ArtifactDigest {
	return []workflows.ArtifactDigest{digestOf("phase1", in.Phase1), digestOf("phase2", in.Phase2)}
}

// Artifacts implements workflows.Delivers.
func (in HostRecoveryInput) Artifacts() []workflows.ArtifactDigest {
	return []workflows.ArtifactDigest{digestOf("phase1", in.Phase1), digestOf("phase2", in.Phase2)}
}
