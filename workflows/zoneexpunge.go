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
	"github.com/fleetsaga/fleetsaga/ledger"
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
}

// ZoneExpungeProgress is the progress query's answer.
type ZoneExpungeProgress struct {
	Progress
	ZoneKind     string    `json:"zoneKind,omitempty"`
	ExpungedAsOf uint64    `json:"expungedAsOf,omitempty"`
	NewOwner     uuid.UUID `json:"newOwner,omitzero"`
}

func init() {
	Kinds[KindZoneExpunge] = KindInfo{Workflow: ZoneExpunge, NewInput: func() UpdateInput { return &ZoneExpungeInput{} }}
}

// ZoneExpunge removes a zone from its sled and, for a Nexus zone, moves its
// unfinished sagas to a live Nexus only once inventory proves it gone
// (DESIGN.md §3.5). It is resumable: run again for the same zone, it picks
// up from the ledger's record.
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
	attempt  *ledger.Attempt // recorded attempt (nil before step 2)
}

var (
	zxActs   *activities.ZoneActivities
	zxLedger *activities.LedgerActivities
)

func (w *zoneExpunge) setup(ctx workflow.Context) error {
	w.timing = w.in.Timing.withDefaults()
	w.result = ZoneExpungeResult{Sled: w.in.Sled, Zone: w.in.Zone}
	now := workflow.Now(ctx)
	w.progress = ZoneExpungeProgress{Progress: Progress{
		Kind: KindZoneExpunge, Target: w.in.Target(), State: StateRunning, Started: now, PhaseSince: now, Unit: "sagas",
	}}
	if err := workflow.SetQueryHandler(ctx, ProgressQuery, func() (ZoneExpungeProgress, error) { return w.progress, nil }); err != nil {
		return err
	}
	if err := w.in.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), failure.InvalidInput, nil)
	}
	return nil
}

func (w *zoneExpunge) run(ctx workflow.Context) (res ZoneExpungeResult, err error) {
	defer func() {
		if err != nil {
			w.fail(ctx, err)
		}
	}()
	pre, err := w.validate(ctx)
	if err != nil {
		return w.result, err
	}
	if pre.Existing != nil && pre.Existing.Completed() {
		w.result.ExpungedAsOf, w.result.SagasMoved, w.result.NewOwner = pre.Existing.ExpungedAsOf, pre.Existing.SagasMoved, pre.Existing.SagaNewOwner
		w.finish(ctx, ZoneOutcomeAlreadyExpunged, fmt.Sprintf("zone %s was already expunged as of generation %d", w.in.Zone, pre.Existing.ExpungedAsOf))
		return w.result, nil
	}
	disp, err := w.recordIntent(ctx, pre)
	if err != nil {
		return w.result, err
	}
	asOf, err := w.removeZone(ctx, disp.ExpungedAsOf)
	if err != nil {
		return w.result, err
	}
	if err := w.awaitInventoryProof(ctx, asOf); err != nil {
		return w.result, err
	}
	if w.result.Kind == sledagent.ZoneTypeNexus {
		if err := w.reassignSagas(ctx); err != nil {
			return w.result, err
		}
	}
	if err := w.commit(ctx); err != nil {
		return w.result, err
	}
	return w.result, nil
}

// validate is step 1.
func (w *zoneExpunge) validate(ctx workflow.Context) (activities.ZonePrecheck, error) {
	w.setPhase(ctx, ZonePhaseValidating)
	var pre activities.ZonePrecheck
	err := workflow.ExecuteActivity(w.deviceOptions(ctx, "check sled "+w.in.Sled.String()+" and zone "+w.in.Zone.String()),
		zxActs.PrecheckZoneExpunge, activities.ZonePrecheckInput{
			UpdateID: workflow.GetInfo(ctx).WorkflowExecution.ID, Sled: w.in.Sled, Zone: w.in.Zone, RackSleds: w.in.RackSleds,
		}).Get(ctx, &pre)
	if err != nil {
		return pre, err
	}
	w.result.Kind, w.progress.ZoneKind = pre.Kind, pre.Kind
	return pre, nil
}

// recordIntent is step 2: the attempt (intent before action), then the
// zone's disposition expunged as of G+1 (or the existing record on resume).
func (w *zoneExpunge) recordIntent(ctx workflow.Context, pre activities.ZonePrecheck) (ledger.ZoneDisposition, error) {
	w.setPhase(ctx, ZonePhaseRecordingIntent)
	info := workflow.GetInfo(ctx)
	if pre.ActiveAttempt != nil {
		a := *pre.ActiveAttempt
		w.attempt = &a
	} else {
		var id uuid.UUID
		if err := workflow.SideEffect(ctx, func(workflow.Context) any { return uuid.New() }).Get(&id); err != nil {
			return ledger.ZoneDisposition{}, err
		}
		a := ledger.Attempt{
			ID: id, UpdateID: info.WorkflowExecution.ID, Attempt: pre.NextAttempt, Kind: string(KindZoneExpunge),
			Target: w.in.Target(), WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID,
		}
		if err := workflow.ExecuteActivity(ledgerOptions(ctx), zxLedger.RecordIntent, a).Get(ctx, nil); err != nil {
			return ledger.ZoneDisposition{}, err
		}
		w.attempt = &a
	}
	w.result.AttemptID = w.attempt.ID
	w.progress.Attempt = w.attempt.Attempt
	var disp ledger.ZoneDisposition
	err := workflow.ExecuteActivity(ledgerOptions(ctx), zxActs.RecordZoneExpungeIntent, activities.ZoneIntentInput{
		AttemptID: w.attempt.ID, Sled: w.in.Sled, Zone: w.in.Zone, Kind: pre.Kind, ExpungedAsOf: pre.LedgeredGeneration + 1,
	}).Get(ctx, &disp)
	if err != nil {
		return disp, err
	}
	w.result.ExpungedAsOf, w.progress.ExpungedAsOf = disp.ExpungedAsOf, disp.ExpungedAsOf
	return disp, nil
}

// removeZone is step 3: PUT the config without the zone until the sled
// ledgers it; rebase when the sled moved on with the zone still in.
func (w *zoneExpunge) removeZone(ctx workflow.Context, asOf uint64) (uint64, error) {
	for {
		w.setPhase(ctx, ZonePhaseRemovingZone)
		deadline := workflow.Now(ctx).Add(w.timing.PutTimeout)
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout:    w.timing.PutTimeout + 2*time.Minute,
			ScheduleToCloseTimeout: w.timing.PutTimeout + 10*time.Minute,
			HeartbeatTimeout:       w.timing.HeartbeatTimeout,
			RetryPolicy:            deviceRetry,
			Summary:                fmt.Sprintf("PUT sled %s config at generation %d without zone %s", w.in.Sled, asOf, w.in.Zone),
		})
		var put activities.ZonePutResult
		err := workflow.ExecuteActivity(actx, zxActs.PutConfigWithoutZone, activities.ZonePutInput{
			AttemptID: w.attempt.ID, Sled: w.in.Sled, Zone: w.in.Zone, ExpungedAsOf: asOf, Deadline: deadline,
			RetryInitial: w.timing.RetryInitial, RetryMax: w.timing.RetryMax,
		}).Get(ctx, &put)
		if err == nil {
			w.result.PutAttempts += put.Attempts
			return asOf, nil
		}
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != failure.StaleGeneration {
			return asOf, err
		}
		var ledgered uint64
		if derr := appErr.Details(&ledgered); derr != nil {
			return asOf, fmt.Errorf("stale generation without details: %w", err)
		}
		if w.result.Rebases >= maxZoneRebases {
			return asOf, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"sled %s moved on %d times while expunging zone %s; giving up (resumable)", w.in.Sled, w.result.Rebases, w.in.Zone),
				failure.TooManyRebases, err)
		}
		w.setPhase(ctx, ZonePhaseRebasing)
		var disp ledger.ZoneDisposition
		if err := workflow.ExecuteActivity(ledgerOptions(ctx), zxActs.RebaseZoneExpunge, activities.ZoneRebaseInput{
			AttemptID: w.attempt.ID, Zone: w.in.Zone, From: asOf, To: ledgered + 1,
		}).Get(ctx, &disp); err != nil {
			return asOf, err
		}
		w.result.Rebases++
		asOf = disp.ExpungedAsOf
		w.result.ExpungedAsOf, w.progress.ExpungedAsOf = asOf, asOf
	}
}

// awaitInventoryProof is step 4; the activity marks ready_for_cleanup.
func (w *zoneExpunge) awaitInventoryProof(ctx workflow.Context, asOf uint64) error {
	w.setPhase(ctx, ZonePhaseAwaitingInventory)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    w.timing.ProofTimeout + 2*time.Minute,
		ScheduleToCloseTimeout: w.timing.ProofTimeout + 10*time.Minute,
		HeartbeatTimeout:       w.timing.HeartbeatTimeout,
		RetryPolicy:            deviceRetry,
		Summary:                fmt.Sprintf("wait for sled %s inventory: generation >= %d and zone %s gone", w.in.Sled, asOf, w.in.Zone),
	})
	var gone activities.ZoneGoneResult
	if err := workflow.ExecuteActivity(actx, zxActs.AwaitZoneGone, activities.ZoneGoneInput{
		AttemptID: w.attempt.ID, Sled: w.in.Sled, Zone: w.in.Zone, ExpungedAsOf: asOf,
		Deadline: workflow.Now(ctx).Add(w.timing.ProofTimeout), PollInterval: w.timing.PollInterval,
	}).Get(ctx, &gone); err != nil {
		return err
	}
	w.result.ObservedGeneration = gone.ObservedGeneration
	return nil
}

// reassignSagas is step 5 (Nexus only, after step 4 holds): choose a live
// Nexus, move the sagas in one transaction, verify none remain.
func (w *zoneExpunge) reassignSagas(ctx workflow.Context) error {
	w.setPhase(ctx, ZonePhaseReassigningSagas)
	owner, err := w.chooseOwner(ctx)
	if err != nil {
		return err
	}
	for round := 1; ; round++ {
		w.setPhase(ctx, ZonePhaseReassigningSagas)
		var moved activities.ZoneReassignResult
		if err := workflow.ExecuteActivity(w.deviceOptions(ctx, fmt.Sprintf("move sagas of %s to %s", w.in.Zone, owner)),
			zxActs.ReassignNexusSagas, activities.ZoneReassignInput{
				AttemptID: w.attempt.ID, Zone: w.in.Zone, NewOwner: owner,
			}).Get(ctx, &moved); err != nil {
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != failure.OwnerGone || round >= maxSagaRounds ||
				workflow.GetVersion(ctx, changeRechooseGoneOwner, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
				return err
			}
			// The owner was expunged before the move (nothing moved): choose again.
			if owner, err = w.chooseOwner(ctx); err != nil {
				return err
			}
			continue
		}
		w.progress.Done += int64(len(moved.Moved))
		w.progress.Total = w.progress.Done + moved.Remaining
		w.setPhase(ctx, ZonePhaseVerifyingSagas)
		var left int64
		if err := workflow.ExecuteActivity(w.deviceOptions(ctx, "count sagas left on "+w.in.Zone.String()),
			zxActs.CountUnfinishedSagas, w.in.Zone).Get(ctx, &left); err != nil {
			return err
		}
		if left == 0 {
			return nil
		}
		if round >= maxSagaRounds {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"%d unfinished sagas still belong to expunged Nexus %s after %d reassignments", left, w.in.Zone, round),
				failure.SagasRemain, nil, left)
		}
		workflow.GetLogger(ctx).Warn("sagas remain on the expunged Nexus; reassigning again", "zone", w.in.Zone, "left", left)
	}
}

// changeRechooseGoneOwner: a saga owner expunged before the move is
// replaced by another live Nexus (issue 14, item 5) instead of failing.
const changeRechooseGoneOwner = "zone-expunge-rechoose-gone-owner"

// chooseOwner picks the live Nexus that adopts the sagas (the operator's
// choice when it is still live).
func (w *zoneExpunge) chooseOwner(ctx workflow.Context) (uuid.UUID, error) {
	var owner uuid.UUID
	if err := workflow.ExecuteActivity(w.deviceOptions(ctx, "choose the Nexus adopting the sagas of "+w.in.Zone.String()),
		zxActs.ChooseSagaOwner, activities.ZoneOwnerInput{
			AttemptID: w.attempt.ID, Sled: w.in.Sled, Zone: w.in.Zone, RackSleds: w.in.RackSleds, Preferred: w.in.NewOwner,
		}).Get(ctx, &owner); err != nil {
		return uuid.Nil, err
	}
	w.result.NewOwner, w.progress.NewOwner = owner, owner
	return owner, nil
}

// commit is step 6.
func (w *zoneExpunge) commit(ctx workflow.Context) error {
	w.setPhase(ctx, ZonePhaseCommitting)
	var disp ledger.ZoneDisposition
	if err := workflow.ExecuteActivity(ledgerOptions(ctx), zxActs.CommitZoneExpunge, activities.ZoneCommitInput{
		AttemptID: w.attempt.ID, Zone: w.in.Zone, NewOwner: w.result.NewOwner,
	}).Get(ctx, &disp); err != nil {
		return err
	}
	w.result.SagasMoved = disp.SagasMoved
	w.progress.Done = int64(disp.SagasMoved)
	w.progress.Total = int64(disp.SagasMoved)
	msg := fmt.Sprintf("zone %s (%s) expunged as of sled generation %d", w.in.Zone, w.result.Kind, w.result.ExpungedAsOf)
	if w.result.Kind == sledagent.ZoneTypeNexus {
		msg += fmt.Sprintf("; %d sagas moved to Nexus %s", disp.SagasMoved, w.result.NewOwner)
	}
	if err := workflow.ExecuteActivity(ledgerOptions(ctx), zxLedger.FinishAttempt, ledger.Finish{
		AttemptID: w.attempt.ID, State: ledger.StateCompleted, Outcome: ZoneOutcomeExpunged,
	}).Get(ctx, nil); err != nil {
		return err
	}
	w.finish(ctx, ZoneOutcomeExpunged, msg)
	return nil
}

func (w *zoneExpunge) deviceOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// One HTTP or SQL call (the worker's HTTP client gives up after 30 s):
		// a call lost with a dead worker is retried after this.
		StartToCloseTimeout:    45 * time.Second,
		ScheduleToCloseTimeout: 15 * time.Minute,
		RetryPolicy:            deviceRetry,
		Summary:                summary,
	})
}

func (w *zoneExpunge) setPhase(ctx workflow.Context, phase Phase) {
	if w.progress.Phase == phase {
		return
	}
	w.progress.Phase, w.progress.PhaseSince = phase, workflow.Now(ctx)
	setSearchState(ctx, StateRunning, Phase(phase))
	if w.attempt != nil {
		_ = workflow.ExecuteActivity(ledgerOptions(ctx), zxLedger.SetProgress, ledger.Progress{
			AttemptID: w.attempt.ID, Phase: string(phase), Done: w.progress.Done, Total: w.progress.Total,
		}).Get(ctx, nil)
	}
}

func (w *zoneExpunge) finish(ctx workflow.Context, outcome, msg string) {
	w.result.Outcome = outcome
	w.progress.State, w.progress.Outcome, w.progress.Message = StateCompleted, outcome, msg
	w.progress.Phase, w.progress.PhaseSince = ZonePhaseDone, workflow.Now(ctx)
	setSearchState(ctx, StateCompleted, ZonePhaseDone)
}

// fail ends the attempt as failed (or cancelled) on a disconnected context,
// so it is recorded even when the workflow was cancelled. The zone's
// disposition stays as recorded: an expunge is never undone, and running the
// workflow again resumes it.
func (w *zoneExpunge) fail(ctx workflow.Context, err error) {
	state, ledgerState := StateFailed, ledger.StateFailed
	if temporal.IsCanceledError(err) {
		state, ledgerState = StateCancelled, ledger.StateCancelled
	}
	w.progress.State, w.progress.Message = state, err.Error()
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	setSearchState(dctx, state, Phase(w.progress.Phase))
	if w.attempt == nil {
		return
	}
	ferr := workflow.ExecuteActivity(ledgerOptions(dctx), zxLedger.FinishAttempt, ledger.Finish{
		AttemptID: w.attempt.ID, State: ledgerState, Outcome: "stopped in phase " + string(w.progress.Phase), Error: err.Error(),
	}).Get(dctx, nil)
	if ferr != nil {
		workflow.GetLogger(ctx).Error("recording the failed attempt failed", "error", ferr)
	}
}
