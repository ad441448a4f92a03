package zoneexpunge

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// The zone expunge's steps, in the order ZoneExpunge runs them.

// validate is step 1.
func (w *zoneExpunge) validate(ctx workflow.Context) (ZonePrecheck, error) {
	w.life.Phase(ctx, ZonePhaseValidating)
	var pre ZonePrecheck
	err := workflow.ExecuteActivity(w.deviceOptions(ctx, "check sled "+w.in.Sled.String()+" and zone "+w.in.Zone.String()),
		zxActs.PrecheckZoneExpunge, ZonePrecheckInput{
			UpdateID: workflow.GetInfo(ctx).WorkflowExecution.ID, Sled: w.in.Sled, Zone: w.in.Zone, RackSleds: w.in.RackSleds,
		}).Get(ctx, &pre)
	if err != nil {
		return pre, err
	}
	w.result.Kind, w.progress.ZoneKind = pre.Kind, pre.Kind
	w.result.Mode, w.result.ModeReason = pre.Mode, pre.ModeReason
	w.progress.Mode, w.progress.ModeReason = pre.Mode, pre.ModeReason
	return pre, nil
}

// unrecordedAttempt makes the ending write this run's attempt and end it at
// once (nothing was touched: the expunge ends before its intent).
func (w *zoneExpunge) unrecordedAttempt(ctx workflow.Context) {
	dctx, _ := workflow.NewDisconnectedContext(ctx) // also after a cancel
	w.life.UnwrittenAttempt(w.life.FreshAttempt(dctx, 1, workflows.KindZoneExpunge, w.in.Target(), ""))
	w.result.AttemptID = w.life.AttemptID()
}

// recordIntent is step 2: the attempt (intent before action; a resumed
// update's active attempt is adopted), then the zone's disposition expunged
// as of G+1 (or the existing record on resume).
func (w *zoneExpunge) recordIntent(ctx workflow.Context, pre ZonePrecheck) (ledger.ZoneDisposition, error) {
	w.life.Phase(ctx, ZonePhaseRecordingIntent)
	if pre.ActiveAttempt != nil {
		w.life.AdoptAttempt(*pre.ActiveAttempt)
	} else {
		if err := w.life.RecordIntent(ctx, w.life.FreshAttempt(ctx, pre.NextAttempt, workflows.KindZoneExpunge, w.in.Target(), "")); err != nil {
			return ledger.ZoneDisposition{}, err
		}
	}
	w.result.AttemptID = w.life.AttemptID()
	w.progress.Attempt = w.life.Attempt.Attempt
	var disp ledger.ZoneDisposition
	err := workflow.ExecuteActivity(workflows.LedgerOptions(ctx), zxActs.RecordZoneExpungeIntent, ZoneIntentInput{
		AttemptID: w.life.AttemptID(), Sled: w.in.Sled, Zone: w.in.Zone, Kind: pre.Kind, ExpungedAsOf: pre.LedgeredGeneration + 1,
		Mode: pre.Mode, ModeReason: pre.ModeReason,
	}).Get(ctx, &disp)
	if err != nil {
		return disp, err
	}
	w.result.ExpungedAsOf, w.progress.ExpungedAsOf = disp.ExpungedAsOf, disp.ExpungedAsOf
	return disp, nil
}

// removeZone is step 3 in direct mode: PUT the config without the zone
// until the sled ledgers it. A sled that moved on with the zone still in
// has another writer: the expunge stops with that reason instead of
// fighting it, except once in a resumed expunge (resumed: the ledger had
// its intent), where the operator ran it again after dealing with the
// other writer and it rebases past the sled's generation.
func (w *zoneExpunge) removeZone(ctx workflow.Context, asOf uint64, resumed bool) (uint64, error) {
	for {
		w.life.Phase(ctx, ZonePhaseRemovingZone, w.modeDetail())
		deadline := workflow.Now(ctx).Add(w.timing.PutTimeout)
		// A cancel waits for the PUT to stop, then asks the sled.
		actx := workflow.WithActivityOptions(workflows.AwaitCancel(ctx), workflow.ActivityOptions{
			StartToCloseTimeout:    w.timing.PutTimeout + 2*time.Minute,
			ScheduleToCloseTimeout: w.timing.PutTimeout + 10*time.Minute,
			HeartbeatTimeout:       w.timing.HeartbeatTimeout,
			RetryPolicy:            workflows.DeviceRetry,
			Summary:                fmt.Sprintf("PUT sled %s config at generation %d without zone %s", w.in.Sled, asOf, w.in.Zone),
		})
		var put ZonePutResult
		err := workflow.ExecuteActivity(actx, zxActs.PutConfigWithoutZone, ZonePutInput{
			AttemptID: w.life.AttemptID(), Sled: w.in.Sled, Zone: w.in.Zone, ExpungedAsOf: asOf, Deadline: deadline,
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
		if !resumed || w.result.Rebases > 0 {
			return asOf, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"another writer changed sled %s's config while fleetsaga was writing it directly (no enabled target blueprint owns it): %s; "+
					"stopped instead of fighting it. Find that writer; running the expunge again then rebases onto the sled's generation",
				w.in.Sled, appErr.Error()), failure.ConfigChangedUnderExpunge, err)
		}
		if asOf, err = w.rebaseLedger(ctx, asOf, appErr); err != nil {
			return asOf, err
		}
	}
}

// rebaseLedger moves the ledger's expunge past the generation a
// StaleGeneration error names (bounded by maxZoneRebases).
func (w *zoneExpunge) rebaseLedger(ctx workflow.Context, asOf uint64, stale *temporal.ApplicationError) (uint64, error) {
	var ledgered uint64
	if derr := stale.Details(&ledgered); derr != nil {
		return asOf, fmt.Errorf("stale generation without details: %w", stale)
	}
	if w.result.Rebases >= maxZoneRebases {
		return asOf, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"sled %s moved on %d times while expunging zone %s; giving up (resumable)", w.in.Sled, w.result.Rebases, w.in.Zone),
			failure.TooManyRebases, stale)
	}
	w.life.Phase(ctx, ZonePhaseRebasing)
	var disp ledger.ZoneDisposition
	if err := workflow.ExecuteActivity(workflows.LedgerOptions(ctx), zxActs.RebaseZoneExpunge, ZoneRebaseInput{
		AttemptID: w.life.AttemptID(), Zone: w.in.Zone, From: asOf, To: ledgered + 1,
	}).Get(ctx, &disp); err != nil {
		return asOf, err
	}
	w.result.Rebases++
	asOf = disp.ExpungedAsOf
	w.result.ExpungedAsOf, w.progress.ExpungedAsOf = asOf, asOf
	return asOf, nil
}

// ownerStepTimeout bounds one ExpungeThroughBlueprint: a few lockstep
// calls per try (each bounded by the worker's 30 s HTTP timeout), up to
// maxTargetRebases tries.
const ownerStepTimeout = 10 * time.Minute

// expungeThroughOwner is step 3 in owner mode: the expunge becomes the
// target blueprint, a child of the current one; a target whose sled moved
// past the ledger's generation rebases the ledger (bounded). It returns the
// generation and the Nexus's unfinished sagas just before.
func (w *zoneExpunge) expungeThroughOwner(ctx workflow.Context, asOf uint64) (uint64, []uuid.UUID, error) {
	for {
		w.life.Phase(ctx, ZonePhaseRemovingZone, w.modeDetail())
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout:    ownerStepTimeout,
			ScheduleToCloseTimeout: w.timing.PutTimeout + ownerStepTimeout,
			HeartbeatTimeout:       w.timing.HeartbeatTimeout,
			RetryPolicy:            workflows.DeviceRetry,
			Summary:                fmt.Sprintf("make a child of the target blueprint expunging zone %s as of sled generation %d the target", w.in.Zone, asOf),
		})
		var res ZoneBlueprintResult
		err := workflow.ExecuteActivity(actx, zxActs.ExpungeThroughBlueprint, ZoneBlueprintInput{
			AttemptID: w.life.AttemptID(), Sled: w.in.Sled, Zone: w.in.Zone, ExpungedAsOf: asOf,
		}).Get(ctx, &res)
		if err == nil {
			w.result.Blueprint = res.TargetID
			w.result.Rebases += res.Rebases
			return asOf, res.Sagas, nil
		}
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != failure.StaleGeneration {
			return asOf, nil, err
		}
		if asOf, err = w.rebaseLedger(ctx, asOf, appErr); err != nil {
			return asOf, nil, err
		}
	}
}

// awaitOwner is step 5 in owner mode, after the inventory proof: Nexus
// marks the zone ready for cleanup and (a Nexus zone) moves its sagas to a
// Nexus of the same generation; the activity proves both.
func (w *zoneExpunge) awaitOwner(ctx workflow.Context, asOf uint64, sagas []uuid.UUID) error {
	w.life.Phase(ctx, ZonePhaseAwaitingOwner, w.modeDetail())
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    w.timing.OwnerTimeout + 2*time.Minute,
		ScheduleToCloseTimeout: w.timing.OwnerTimeout + 10*time.Minute,
		HeartbeatTimeout:       w.timing.HeartbeatTimeout,
		RetryPolicy:            workflows.DeviceRetry,
		Summary:                fmt.Sprintf("wait for Nexus: zone %s ready for cleanup in the target blueprint, its sagas moved", w.in.Zone),
	})
	var res ZoneOwnerCleanupResult
	if err := workflow.ExecuteActivity(actx, zxActs.AwaitOwnerCleanup, ZoneOwnerCleanupInput{
		AttemptID: w.life.AttemptID(), Sled: w.in.Sled, Zone: w.in.Zone, Nexus: w.result.Kind == sledagent.ZoneTypeNexus,
		ExpungedAsOf: asOf, Sagas: sagas, Deadline: workflow.Now(ctx).Add(w.timing.OwnerTimeout), PollInterval: w.timing.PollInterval,
	}).Get(ctx, &res); err != nil {
		return err
	}
	w.result.Blueprint = res.TargetID
	w.result.NewOwner, w.progress.NewOwner = res.NewOwner, res.NewOwner
	return nil
}

// awaitInventoryProof is step 4; the activity marks ready_for_cleanup.
func (w *zoneExpunge) awaitInventoryProof(ctx workflow.Context, asOf uint64) error {
	w.life.Phase(ctx, ZonePhaseAwaitingInventory)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    w.timing.ProofTimeout + 2*time.Minute,
		ScheduleToCloseTimeout: w.timing.ProofTimeout + 10*time.Minute,
		HeartbeatTimeout:       w.timing.HeartbeatTimeout,
		RetryPolicy:            workflows.DeviceRetry,
		Summary:                fmt.Sprintf("wait for sled %s inventory: generation >= %d and zone %s gone", w.in.Sled, asOf, w.in.Zone),
	})
	var gone ZoneGoneResult
	if err := workflow.ExecuteActivity(actx, zxActs.AwaitZoneGone, ZoneGoneInput{
		AttemptID: w.life.AttemptID(), Sled: w.in.Sled, Zone: w.in.Zone, ExpungedAsOf: asOf,
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
	w.life.Phase(ctx, ZonePhaseReassigningSagas)
	owner, err := w.chooseOwner(ctx)
	if err != nil {
		return err
	}
	for round := 1; ; round++ {
		w.life.Phase(ctx, ZonePhaseReassigningSagas)
		var moved ZoneReassignResult
		if err := workflow.ExecuteActivity(w.deviceOptions(ctx, fmt.Sprintf("move sagas of %s to %s", w.in.Zone, owner)),
			zxActs.ReassignNexusSagas, ZoneReassignInput{
				AttemptID: w.life.AttemptID(), Zone: w.in.Zone, NewOwner: owner,
			}).Get(ctx, &moved); err != nil {
			var appErr *temporal.ApplicationError
			if !errors.As(err, &appErr) || appErr.Type() != failure.OwnerGone || round >= maxSagaRounds {
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
		w.life.Phase(ctx, ZonePhaseVerifyingSagas)
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

// chooseOwner picks the live Nexus that adopts the sagas (the operator's
// choice when it is still live).
func (w *zoneExpunge) chooseOwner(ctx workflow.Context) (uuid.UUID, error) {
	var owner uuid.UUID
	actx := workflow.WithScheduleToCloseTimeout(w.deviceOptions(ctx, "choose the Nexus adopting the sagas of "+w.in.Zone.String()),
		ownerChoiceBound)
	if err := workflow.ExecuteActivity(actx, zxActs.ChooseSagaOwner, ZoneOwnerInput{
		AttemptID: w.life.AttemptID(), Sled: w.in.Sled, Zone: w.in.Zone, RackSleds: w.in.RackSleds, Preferred: w.in.NewOwner,
	}).Get(ctx, &owner); err != nil {
		return uuid.Nil, err
	}
	w.result.NewOwner, w.progress.NewOwner = owner, owner
	return owner, nil
}

// commit is step 6 (the ending ends the ledger attempt).
func (w *zoneExpunge) commit(ctx workflow.Context) error {
	w.life.Phase(ctx, ZonePhaseCommitting)
	var disp ledger.ZoneDisposition
	if err := workflow.ExecuteActivity(workflows.LedgerOptions(ctx), zxActs.CommitZoneExpunge, ZoneCommitInput{
		AttemptID: w.life.AttemptID(), Zone: w.in.Zone, NewOwner: w.result.NewOwner,
	}).Get(ctx, &disp); err != nil {
		return err
	}
	w.result.SagasMoved = disp.SagasMoved
	w.progress.Done = int64(disp.SagasMoved)
	w.progress.Total = int64(disp.SagasMoved)
	msg := fmt.Sprintf("zone %s (%s) expunged as of sled generation %d", w.in.Zone, w.result.Kind, w.result.ExpungedAsOf)
	switch {
	case w.result.Mode == ModeOwner:
		msg += fmt.Sprintf(" through target blueprint %s (Nexus owns the sled's config)", w.result.Blueprint)
		if w.result.Kind == sledagent.ZoneTypeNexus {
			msg += fmt.Sprintf("; Nexus moved %d of its sagas to Nexus %s of the same generation", disp.SagasMoved, w.result.NewOwner)
		}
	case w.result.Kind == sledagent.ZoneTypeNexus:
		msg += fmt.Sprintf("; %d sagas moved to Nexus %s", disp.SagasMoved, w.result.NewOwner)
	}
	w.result.Outcome, w.message = ZoneOutcomeExpunged, msg
	return nil
}

// modeDetail is the Web UI's detail line: who writes the sled's config.
func (w *zoneExpunge) modeDetail() string {
	if w.result.Mode == "" {
		return ""
	}
	return fmt.Sprintf("mode %s (%s)", w.result.Mode, w.result.ModeReason)
}

func (w *zoneExpunge) deviceOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// One HTTP or SQL call (the worker's HTTP client gives up after 30 s):
		// a call lost with a dead worker is retried after this.
		StartToCloseTimeout:    45 * time.Second,
		ScheduleToCloseTimeout: 15 * time.Minute,
		RetryPolicy:            workflows.DeviceRetry,
		Summary:                summary,
	})
}
