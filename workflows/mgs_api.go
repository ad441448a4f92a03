package workflows

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// This file is the contract of the two MGS update kinds (SPFirmwareUpdate,
// HostBootFlashUpdate): what they target, their timings, phases, outcomes
// and result. Their shared driver is mgsUpdate (mgs_driver.go).

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
type Artifact = activities.ArtifactRef

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

// MGSTiming paces and bounds an MGS update (zero = default). The defaults
// are the real devices' (DOMAIN.md §B); tests against a sped-up fleetsim
// shrink them.
type MGSTiming struct {
	// PollInterval paces status polls (default 3 s).
	PollInterval time.Duration `json:"pollInterval,omitempty"`
	// ProgressTimeout: an update whose progress does not change for this
	// long is stuck: aborted, and a new attempt starts (default 600 s, the
	// Nexus driver's PROGRESS_TIMEOUT).
	ProgressTimeout time.Duration `json:"progressTimeout,omitempty"`
	// TakeoverTimeout: someone else's complete update that nobody resets
	// within this is taken over (default 600 s).
	TakeoverTimeout time.Duration `json:"takeoverTimeout,omitempty"`
	// ResetRetryInterval: after a reset whose reply was lost, wait this
	// long, re-check, then reset again if needed (default 10 s).
	ResetRetryInterval time.Duration `json:"resetRetryInterval,omitempty"`
	// NewVersionTimeout bounds the wait for the new version after a reset
	// (default SP 60 s, 120 s on a switch) or for the host's boot (30 min).
	NewVersionTimeout time.Duration `json:"newVersionTimeout,omitempty"`
	// AttemptDelay is the pause before a new attempt (default 60 s).
	AttemptDelay time.Duration `json:"attemptDelay,omitempty"`
	// MaxAttempts bounds the attempts (default 5).
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// CheckpointEvery: a long wait reports progress to the workflow this
	// often (default 60 s; at most maxCheckpoints per wait).
	CheckpointEvery time.Duration `json:"checkpointEvery,omitempty"`
	// HeartbeatTimeout: how soon a dead worker's device step is retried
	// elsewhere (default 30 s).
	HeartbeatTimeout time.Duration `json:"heartbeatTimeout,omitempty"`
}

func (t MGSTiming) withDefaults(newVersion time.Duration) MGSTiming {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&t.PollInterval, 3*time.Second)
	def(&t.ProgressTimeout, 600*time.Second)
	def(&t.TakeoverTimeout, 600*time.Second)
	def(&t.ResetRetryInterval, 10*time.Second)
	def(&t.NewVersionTimeout, newVersion)
	def(&t.AttemptDelay, 60*time.Second)
	def(&t.CheckpointEvery, 60*time.Second)
	def(&t.HeartbeatTimeout, 30*time.Second)
	if t.MaxAttempts <= 0 {
		t.MaxAttempts = 5
	}
	return t
}

func (t MGSTiming) validate(what string) error {
	for _, d := range []time.Duration{t.PollInterval, t.ProgressTimeout, t.TakeoverTimeout, t.ResetRetryInterval,
		t.NewVersionTimeout, t.AttemptDelay, t.CheckpointEvery, t.HeartbeatTimeout} {
		if d < 0 {
			return fmt.Errorf("%s: timings must not be negative", what)
		}
	}
	if t.MaxAttempts < 0 {
		return fmt.Errorf("%s: maxAttempts must not be negative", what)
	}
	return nil
}

// maxCheckpoints bounds the progress checkpoints of one wait, so a long
// delivery costs a handful of history events at most.
const maxCheckpoints = 4

// MGS update phases, in order (progress query, search attribute, ledger),
// after the Nexus driver's.
const (
	MGSPhasePrecheck     Phase = "precheck"
	MGSPhaseUpdating     Phase = "updating"
	MGSPhaseConcurrent   Phase = "waiting-for-concurrent-update"
	MGSPhasePostUpdate   Phase = "post-update"
	MGSPhaseHostBoot     Phase = "host-boot"
	MGSPhaseAttemptPause Phase = "attempt-pause"
	MGSPhaseDone         Phase = "done"
)

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
}

// MGSProgress is the progress query's answer: the common Progress plus the
// attempt and device update IDs.
type MGSProgress struct {
	Progress
	AttemptID string `json:"attemptId,omitempty"`
	// Concurrent is the foreign update being watched, if any.
	Concurrent string `json:"concurrent,omitempty"`
}

// CompareVersions compares dotted versions numerically field by field
// ("1.10.0" > "1.9.2"); non-numeric fields compare as strings. It returns
// -1, 0 or 1.
func CompareVersions(a, b string) int {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '-' || r == '+' })
	}
	as, bs := split(a), split(b)
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y string
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		xn, xerr := strconv.ParseUint(x, 10, 64)
		yn, yerr := strconv.ParseUint(y, 10, 64)
		switch {
		case x == y:
			continue
		case xerr == nil && yerr == nil:
			if xn < yn {
				return -1
			}
			return 1
		case x == "":
			return -1
		case y == "":
			return 1
		case x < y:
			return -1
		default:
			return 1
		}
	}
	return 0
}
