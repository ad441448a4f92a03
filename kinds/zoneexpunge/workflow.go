package zoneexpunge

import (
	"fmt"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// ZoneExpunge removes a zone from its sled and, for a Nexus zone, moves its
// unfinished sagas to a live Nexus only once inventory proves it gone.
// Where an enabled target blueprint owns the sled's
// config (ModeOwner, docs/CONFORMANCE.md §I), the expunge is a child of the target
// that Nexus carries out, and fleetsaga proves it; elsewhere (ModeDirect)
// fleetsaga writes the config and moves the sagas itself. It is resumable: run again for the same zone, it picks
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
	life     *workflows.Lifecycle
	message  string // the success message
}

var zxActs *ZoneActivities

func (w *zoneExpunge) setup(ctx workflow.Context) error {
	w.timing = w.in.Timing.withDefaults()
	w.result = ZoneExpungeResult{Sled: w.in.Sled, Zone: w.in.Zone}
	w.progress = ZoneExpungeProgress{Progress: workflows.Progress{Kind: workflows.KindZoneExpunge, Target: w.in.Target(), Unit: "sagas"}}
	if err := w.in.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), failure.InvalidInput, nil)
	}
	life, err := workflows.NewLifecycle(ctx, &w.progress.Progress, ZonePhaseValidating, workflows.LedgerWriter{},
		func() ZoneExpungeProgress { return w.progress })
	if err != nil {
		return err
	}
	w.life = life
	life.RecordPhaseInLedger()
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
	owner := pre.Mode == ModeOwner
	var asOf uint64
	var sagas []uuid.UUID
	if owner {
		// Once the child blueprint may be the target, Nexus removes the
		// zone whatever the workflow does: the step is not cancellable.
		octx, ocancel := workflow.NewDisconnectedContext(ctx)
		asOf, sagas, err = w.expungeThroughOwner(octx, disp.ExpungedAsOf)
		ocancel()
		if err != nil {
			return w.end(ctx, err)
		}
	} else {
		asOf, err = w.removeZone(ctx, disp.ExpungedAsOf, pre.Existing != nil)
		if err != nil && !w.removedDespiteCancel(ctx, asOf, err) {
			return w.end(ctx, err)
		}
	}
	// The sled removed the zone: from here on the expunge is finished even
	// if the operator cancels (see ZoneExpunge).
	sctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	if err := w.awaitInventoryProof(sctx, asOf); err != nil {
		return w.end(sctx, err)
	}
	switch {
	case owner:
		if err := w.awaitOwner(sctx, asOf, sagas); err != nil {
			return w.end(sctx, err)
		}
	case w.result.Kind == sledagent.ZoneTypeNexus:
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
	return w.result, w.life.End(ctx, err, workflows.Ending{Outcome: w.result.Outcome, Message: w.message, Phase: ZonePhaseDone})
}

// removedDespiteCancel: a cancel stopped the config PUT (awaited), which
// may have landed first. The sled says whether it ledgered the config
// without the zone; if it did, the expunge goes on.
func (w *zoneExpunge) removedDespiteCancel(ctx workflow.Context, asOf uint64, err error) bool {
	if !workflows.IsCancel(ctx, err) {
		return false
	}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	var removed bool
	if err := workflow.ExecuteActivity(w.deviceOptions(dctx, "did sled "+w.in.Sled.String()+" remove zone "+w.in.Zone.String()+"?"),
		zxActs.ZoneRemovalLedgered, ZoneRemovedInput{
			AttemptID: w.life.AttemptID(), Sled: w.in.Sled, Zone: w.in.Zone, ExpungedAsOf: asOf,
		}).Get(dctx, &removed); err != nil {
		workflow.GetLogger(ctx).Error("cancelled: could not learn whether the sled removed the zone; running the expunge again resumes it",
			"zone", w.in.Zone, "error", err)
		return false
	}
	return removed
}
