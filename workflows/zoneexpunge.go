package workflows

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
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
	// NewOwner optionally names the Nexus zone that adopts the sagas.
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
	for _, d := range []time.Duration{t.PutTimeout, t.RetryInitial, t.RetryMax, t.PollInterval, t.ProofTimeout, t.HeartbeatTimeout} {
		if d < 0 {
			errs = append(errs, errors.New("zone-expunge: timings must not be negative"))
			break
		}
	}
	return errors.Join(errs...)
}

// Zone expunge phases, in order (progress query, search attribute, ledger).
const (
	ZonePhaseValidating        Phase = "validating"
	ZonePhaseRecordingIntent   Phase = "recording-intent"
	ZonePhaseRemovingZone      Phase = "removing-zone"
	ZonePhaseRebasing          Phase = "rebasing"
	ZonePhaseAwaitingInventory Phase = "awaiting-inventory-proof"
	ZonePhaseReassigningSagas  Phase = "reassigning-sagas"
	ZonePhaseVerifyingSagas    Phase = "verifying-sagas"
	ZonePhaseCommitting        Phase = "committing"
	ZonePhaseDone              Phase = "done"
)

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
	Outcome      string    `json:"outcome"`
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
	Progress
	ZoneKind     string    `json:"zoneKind,omitempty"`
	ExpungedAsOf uint64    `json:"expungedAsOf,omitempty"`
	NewOwner     uuid.UUID `json:"newOwner,omitzero"`
}

// ZoneExpunge removes a zone from its sled and, for a Nexus zone, moves its
// unfinished sagas to a live Nexus only once inventory proves it gone
// (DESIGN.md §3.5). It is resumable: run again for the same zone, it picks
// up from the ledger's record.
//
// Cancel: before the sled ledgered the config without the zone, a cancel
// stops the expunge (the attempt ends cancelled; the zone's disposition
// stays recorded, and running the workflow again resumes it). Once the
// sled removed the zone, an expunge is never undone, so a cancel no longer
// stops it: the steps that keep the fleet safe (inventory proof, saga move,
// verify, commit) run to the end, and the update ends completed with
// CancelIgnored set, so that no saga is left on a Nexus that is gone.
func ZoneExpunge(ctx workflow.Context, in ZoneExpungeInput) (ZoneExpungeResult, error) {
	w := &zoneExpunge{in: in}
	if err := w.setup(ctx); err != nil {
		return w.result, err
	}
	return w.run(ctx)
}

type zoneExpunge struct {
	in       ZoneExpungeInput
	timing   ZoneExpungeTiming
	progress ZoneExpungeProgress
	result   ZoneExpungeResult
	life     *Lifecycle
	message  string // the success message
}

var zxActs *activities.ZoneActivities

func (w *zoneExpunge) setup(ctx workflow.Context) error {
	w.timing = w.in.Timing.withDefaults()
	w.result = ZoneExpungeResult{Sled: w.in.Sled, Zone: w.in.Zone}
	w.progress = ZoneExpungeProgress{Progress: Progress{Kind: KindZoneExpunge, Target: w.in.Target(), Unit: "sagas"}}
	if err := w.in.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), failure.InvalidInput, nil)
	}
	life, err := NewLifecycle(ctx, &w.progress.Progress, ZonePhaseValidating, ledgerWriter{},
		func() ZoneExpungeProgress { return w.progress })
	if err != nil {
		return err
	}
	w.life = life
	life.recordPhaseInLedger()
	return nil
}

func (w *zoneExpunge) run(ctx workflow.Context) (ZoneExpungeResult, error) {
	pre, err := w.validate(ctx)
	if err != nil {
		w.unrecordedAttempt(ctx)
		return w.end(ctx, err)
	}
	if pre.Existing != nil && pre.Existing.Completed() {
		w.result.ExpungedAsOf, w.result.SagasMoved, w.result.NewOwner = pre.Existing.ExpungedAsOf, pre.Existing.SagasMoved, pre.Existing.SagaNewOwner
		w.result.Outcome = ZoneOutcomeAlreadyExpunged
		w.message = fmt.Sprintf("zone %s was already expunged as of generation %d", w.in.Zone, pre.Existing.ExpungedAsOf)
		return w.end(ctx, nil)
	}
	disp, err := w.recordIntent(ctx, pre)
	if err != nil {
		return w.end(ctx, err)
	}
	asOf, err := w.removeZone(ctx, disp.ExpungedAsOf)
	if err != nil && !w.removedDespiteCancel(ctx, asOf, err) {
		return w.end(ctx, err)
	}
	// The sled removed the zone: from here on the expunge is finished even
	// if the operator cancels (see ZoneExpunge).
	sctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	if err := w.awaitInventoryProof(sctx, asOf); err != nil {
		return w.end(sctx, err)
	}
	if w.result.Kind == sledagent.ZoneTypeNexus {
		if err := w.reassignSagas(sctx); err != nil {
			return w.end(sctx, err)
		}
	}
	if err := w.commit(sctx); err != nil {
		return w.end(sctx, err)
	}
	if ctx.Err() != nil {
		w.result.CancelIgnored = true
		w.message += "; the cancel arrived after the sled removed the zone: an expunge is never undone, so it was finished"
	}
	return w.end(sctx, nil)
}

// end ends the expunge through the lifecycle. The zone's disposition stays
// as recorded on every path: an expunge is never undone.
func (w *zoneExpunge) end(ctx workflow.Context, err error) (ZoneExpungeResult, error) {
	return w.result, w.life.End(ctx, err, Ending{Outcome: w.result.Outcome, Message: w.message, Phase: ZonePhaseDone})
}

// removedDespiteCancel: a cancel stopped the config PUT (awaited), which
// may have landed first. The sled says whether it ledgered the config
// without the zone; if it did, the expunge goes on.
func (w *zoneExpunge) removedDespiteCancel(ctx workflow.Context, asOf uint64, err error) bool {
	if !IsCancel(ctx, err) {
		return false
	}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	var removed bool
	if err := workflow.ExecuteActivity(w.deviceOptions(dctx, "did sled "+w.in.Sled.String()+" remove zone "+w.in.Zone.String()+"?"),
		zxActs.ZoneRemovalLedgered, activities.ZoneRemovedInput{
			AttemptID: w.life.attemptID(), Sled: w.in.Sled, Zone: w.in.Zone, ExpungedAsOf: asOf,
		}).Get(dctx, &removed); err != nil {
		workflow.GetLogger(ctx).Error("cancelled: could not learn whether the sled removed the zone; running the expunge again resumes it",
			"zone", w.in.Zone, "error", err)
		return false
	}
	return removed
}
