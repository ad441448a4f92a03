// Package zoneexpunge is the zone expunge kind: its contract (input,
// phases, outcomes, result: contract.go), its workflow and steps
// (workflow.go, steps.go), its activities (activities*.go) and its dry run
// (plan.go, plan_activities.go).
package zoneexpunge

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// ZoneExpungeInput names the zone to expunge from its sled.
type ZoneExpungeInput struct {
	Sled uuid.UUID `json:"sled"`
	Zone uuid.UUID `json:"zone"`
	// RackSleds are extra sleds whose inventories count the in-service
	// Nexus zones left and offer the live Nexus that adopts the sagas. The
	// rack's sleds come from Nexus's sled table (Sled is always included);
	// this is needed only without a Nexus database.
	RackSleds []uuid.UUID `json:"rackSleds,omitempty"`
	// NewOwner optionally names the Nexus zone that adopts the sagas
	// (direct mode only: in owner mode Nexus chooses, and fleetsaga proves
	// its choice is of the same nexus_generation).
	NewOwner uuid.UUID         `json:"newOwner,omitzero"`
	Timing   ZoneExpungeTiming `json:"timing,omitzero"`
}

// ZoneExpungeTiming bounds and paces the device steps (zero = default).
type ZoneExpungeTiming struct {
	// PutTimeout bounds step 3's retrying of the config PUT (default 30 min:
	// a zone that cannot be removed in that time needs an operator).
	PutTimeout time.Duration `json:"putTimeout,omitempty"`
	// RetryInitial / RetryMax: the PUT's backoff (default 1 s doubling to 30 s).
	RetryInitial time.Duration `json:"retryInitial,omitempty"`
	RetryMax     time.Duration `json:"retryMax,omitempty"`
	// PollInterval paces step 4's inventory reads (default 1 s).
	PollInterval time.Duration `json:"pollInterval,omitempty"`
	// ProofTimeout bounds step 4 (default 10 min; the sled ledgered the
	// config already, so inventory should show it at once).
	ProofTimeout time.Duration `json:"proofTimeout,omitempty"`
	// HeartbeatTimeout: how soon a dead worker's device step is retried
	// elsewhere (default 30 s).
	HeartbeatTimeout time.Duration `json:"heartbeatTimeout,omitempty"`
	// OwnerTimeout bounds, in owner mode, the wait for Nexus to mark the
	// zone ready for cleanup and move its sagas (default 30 min: Nexus's
	// planner needs a fresh inventory collection, and its executor runs
	// every 60 s, a few rounds each).
	OwnerTimeout time.Duration `json:"ownerTimeout,omitempty"`
}

func (t ZoneExpungeTiming) withDefaults() ZoneExpungeTiming {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&t.PutTimeout, 30*time.Minute)
	def(&t.RetryInitial, time.Second)
	def(&t.RetryMax, 30*time.Second)
	def(&t.PollInterval, time.Second)
	def(&t.ProofTimeout, 10*time.Minute)
	def(&t.HeartbeatTimeout, 30*time.Second)
	def(&t.OwnerTimeout, 30*time.Minute)
	return t
}

// ZoneExpungeTarget is the ledger target of a zone expunge.
func ZoneExpungeTarget(zone uuid.UUID) string { return "zone/" + zone.String() }

// Target implements UpdateInput.
func (in ZoneExpungeInput) Target() string { return ZoneExpungeTarget(in.Zone) }

// ArtifactVersion implements UpdateInput (an expunge installs nothing).
func (in ZoneExpungeInput) ArtifactVersion() string { return "" }

// Validate implements UpdateInput.
func (in ZoneExpungeInput) Validate() error {
	var errs []error
	if in.Sled == uuid.Nil {
		errs = append(errs, errors.New("zone-expunge: sled is required"))
	}
	if in.Zone == uuid.Nil {
		errs = append(errs, errors.New("zone-expunge: zone is required"))
	}
	for i, s := range in.RackSleds {
		if s == uuid.Nil {
			errs = append(errs, fmt.Errorf("zone-expunge: rackSleds[%d] is empty", i))
		}
	}
	if in.NewOwner != uuid.Nil && in.NewOwner == in.Zone {
		errs = append(errs, errors.New("zone-expunge: newOwner cannot be the zone being expunged"))
	}
	t := in.Timing
	for _, d := range []time.Duration{t.PutTimeout, t.RetryInitial, t.RetryMax, t.PollInterval, t.ProofTimeout, t.HeartbeatTimeout, t.OwnerTimeout} {
		if d < 0 {
			errs = append(errs, errors.New("zone-expunge: timings must not be negative"))
			break
		}
	}
	return errors.Join(errs...)
}

// Who writes the sled's config for this expunge (docs/CONFORMANCE.md §I), decided by
// the precheck and recorded in the ledger, the result and the progress.
const (
	// ModeOwner: an enabled target blueprint owns the sled's config, and
	// Nexus's executor writes it. The expunge is a child of the target with
	// the zone expunged, made the target; Nexus removes the zone, marks it
	// ready for cleanup and moves its sagas; fleetsaga proves all of it.
	ModeOwner = "owner"
	// ModeDirect: direct mode is configured (the racks have no Nexus,
	// fleet.Endpoints.DirectMode): fleetsaga writes the config itself and
	// moves the sagas, and stops if another writer moves the sled on.
	ModeDirect = "direct"
)

// Zone expunge phases, in order (progress query, search attribute, ledger).
const (
	ZonePhaseValidating      workflows.Phase = "validating"
	ZonePhaseRecordingIntent workflows.Phase = "recording-intent"
	ZonePhaseRemovingZone    workflows.Phase = "removing-zone"
	ZonePhaseRebasing        workflows.Phase = "rebasing"
	// ZonePhaseAwaitingOwner (owner mode): Nexus marks the zone ready for
	// cleanup and moves its sagas; fleetsaga waits and proves it.
	ZonePhaseAwaitingOwner     workflows.Phase = "awaiting-owner"
	ZonePhaseAwaitingInventory workflows.Phase = "awaiting-inventory-proof"
	ZonePhaseReassigningSagas  workflows.Phase = "reassigning-sagas"
	ZonePhaseVerifyingSagas    workflows.Phase = "verifying-sagas"
	ZonePhaseCommitting        workflows.Phase = "committing"
	ZonePhaseDone              workflows.Phase = "done"
)

func init() {
	workflows.DeclarePhases([]workflows.Phase{ZonePhaseValidating, ZonePhaseRecordingIntent, ZonePhaseRemovingZone, ZonePhaseRebasing,
		ZonePhaseAwaitingInventory, ZonePhaseAwaitingOwner, ZonePhaseReassigningSagas, ZonePhaseVerifyingSagas, ZonePhaseCommitting, ZonePhaseDone},
		ZonePhaseRemovingZone, ZonePhaseAwaitingInventory, ZonePhaseAwaitingOwner, ZonePhaseReassigningSagas, ZonePhaseVerifyingSagas)
}

// Zone expunge outcomes.
const (
	// ZoneOutcomeExpunged: removed, proven gone, sagas (if a Nexus) moved.
	ZoneOutcomeExpunged = "ZoneExpunged"
	// ZoneOutcomeAlreadyExpunged: the ledger had the expunge committed already.
	ZoneOutcomeAlreadyExpunged = "AlreadyExpunged"
)

const (
	// maxZoneRebases bounds how often the expunge chases a sled that keeps
	// moving on (each rebase is another actor's newer config).
	maxZoneRebases = 20
	// maxSagaRounds bounds reassign-then-verify rounds. With the gate held
	// one round suffices; a second covers a saga that a racing writer left.
	maxSagaRounds = 3
	// ownerChoiceBound is how long the choice of the Nexus that adopts the
	// sagas waits out sleds that do not answer (a sled-agent restarting, a
	// switch out): the zone is gone by then, and its sagas must not be given
	// up for an outage the rack recovers from.
	ownerChoiceBound = time.Hour
)

// ZoneExpungeResult says how the expunge ended.
type ZoneExpungeResult struct {
	Outcome string `json:"outcome"`
	// Mode is who wrote the sled's config (ModeOwner, ModeDirect), and
	// ModeReason why.
	Mode       string `json:"mode,omitempty"`
	ModeReason string `json:"modeReason,omitempty"`
	// Blueprint is, in owner mode, the target blueprint that expunged the zone.
	Blueprint    uuid.UUID `json:"blueprint,omitzero"`
	Sled         uuid.UUID `json:"sled"`
	Zone         uuid.UUID `json:"zone"`
	Kind         string    `json:"kind"`
	AttemptID    uuid.UUID `json:"attemptId,omitzero"`
	ExpungedAsOf uint64    `json:"expungedAsOf"`
	// ObservedGeneration is the sled generation inventory showed as proof.
	ObservedGeneration uint64    `json:"observedGeneration,omitempty"`
	Rebases            int       `json:"rebases,omitempty"`
	PutAttempts        int       `json:"putAttempts,omitempty"`
	SagasMoved         int       `json:"sagasMoved"`
	NewOwner           uuid.UUID `json:"newOwner,omitzero"`
	// CancelIgnored: a cancel arrived after the sled had removed the zone;
	// an expunge is never undone, so the expunge was finished instead.
	CancelIgnored bool `json:"cancelIgnored,omitempty"`
}

// ZoneExpungeProgress is the progress query's answer.
type ZoneExpungeProgress struct {
	workflows.Progress
	ZoneKind     string    `json:"zoneKind,omitempty"`
	Mode         string    `json:"mode,omitempty"`
	ModeReason   string    `json:"modeReason,omitempty"`
	ExpungedAsOf uint64    `json:"expungedAsOf,omitempty"`
	NewOwner     uuid.UUID `json:"newOwner,omitzero"`
}
