package workflows

import (
	"strconv"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/workflow"
)

// changeBookkeepingV2 names the change that halves what an update costs the
// Temporal server (issue #17), without changing a device call:
//   - ledger writes run as local activities: a few milliseconds against
//     PostgreSQL that no longer cost an activity task, three history events
//     and a workflow task each;
//   - attempt IDs are derived from the run ID and a counter instead of a
//     SideEffect marker, so a ledger write repeated after a worker died
//     mid-task writes the same ID again (a local activity's write is not
//     in history until its workflow task completes);
//   - only the phases an operator filters by (the long ones, Phase.Filtered)
//     go to the FleetsagaPhase search attribute; the others show in the
//     progress query and the current details, which cost no event;
//   - the changes made before it (consolidatedChanges) are taken without a
//     version marker and a TemporalChangeVersion upsert each.
//
// A run started before it keeps the old path to its end.
const changeBookkeepingV2 = "bookkeeping-v2"

// changeBookkeepingV3 names the second cut (issue #17): an SP firmware
// update's prechecks are local activities, and its start and the first
// leg of its wait are one activity (MGS accepts an update at once: no
// decision lies between them), which saves two workflow tasks and two
// activity tasks per update. It takes every change before it
// (consolidatedChanges, consolidatedV3) without a marker of its own.
const changeBookkeepingV3 = "bookkeeping-v3"

// bookkeeping is the cost level this run takes: 3 (changeBookkeepingV3),
// 2 (changeBookkeepingV2) or 1 (neither). A fresh run records only the
// newest marker; a run that recorded an older one replays it. The first
// call records the version; later calls return it at no cost.
func bookkeeping(ctx workflow.Context) int {
	if workflow.GetVersion(ctx, changeBookkeepingV3, workflow.DefaultVersion, 1) >= 1 {
		return 3
	}
	if workflow.GetVersion(ctx, changeBookkeepingV2, workflow.DefaultVersion, 1) >= 1 {
		return 2
	}
	return 1
}

// bookkeepingV2 says whether this run takes changeBookkeepingV2 (which
// changeBookkeepingV3 includes).
func bookkeepingV2(ctx workflow.Context) bool { return bookkeeping(ctx) >= 2 }

// bookkeepingV3 says whether this run takes changeBookkeepingV3.
func bookkeepingV3(ctx workflow.Context) bool { return bookkeeping(ctx) >= 3 }

// consolidatedChanges are the changes older than changeBookkeepingV2: a run
// that takes it takes them all. consolidatedV3 are those made between
// changeBookkeepingV2 and changeBookkeepingV3. A change made later is never
// added to either (a run that took that level before the change existed
// would be taken to have it): it calls hasChange, which then asks
// GetVersion for it.
var consolidatedChanges = map[string]bool{
	changeAgentDriftCancelEnds: true, changeAgentDriftRemoveOrphans: true,
	changeAgentClaims: true, changeAgentPlanEndsThroughLifecycle: true, changeAgentPlanErrorWaits: true,
	changeBootImageOptInFromCluster: true, changeBootImageAwaitCancel: true, changeBootImageLedgerEndFirst: true,
	changePrecheckEveryAttempt: true, changeAbortBeforeStart: true,
	changeRolloutCancelWaits: true, changeRolloutEndsOnEveryError: true, changeRolloutPlanAtGate: true,
	changeZoneFinishAfterRemoval: true, changeZoneLedgerEndFirst: true, changeZoneRowForEveryEnd: true,
	changeRechooseGoneOwner: true,
}

var consolidatedV3 = map[string]bool{
	changeHostFinishAfterPowerCycle: true, changeBootImageAdoptAbandoned: true,
	changeAgentWindowAcrossRuns: true, changeAgentServerReports: true,
}

// hasChange says whether this run takes change (a GetVersion change with
// versions DefaultVersion and 1).
func hasChange(ctx workflow.Context, change string) bool {
	if (consolidatedChanges[change] && bookkeepingV2(ctx)) || (consolidatedV3[change] && bookkeepingV3(ctx)) {
		return true
	}
	return workflow.GetVersion(ctx, change, workflow.DefaultVersion, 1) >= 1
}

// ledgerCall runs a ledger activity: a local activity under
// changeBookkeepingV2, a regular one before it. Ledger activities are
// idempotent by the IDs in their input, so the re-run of a local activity
// whose workflow task was lost writes nothing twice.
func ledgerCall(ctx workflow.Context, activity, arg any) workflow.Future {
	if bookkeepingV2(ctx) {
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout:    10 * time.Second,
			ScheduleToCloseTimeout: 30 * time.Minute,
			RetryPolicy:            ledgerRetry,
		})
		return workflow.ExecuteLocalActivity(lctx, activity, arg)
	}
	return workflow.ExecuteActivity(ledgerOptions(ctx), activity, arg)
}

// attemptNamespace scopes the attempt IDs derived from run IDs.
var attemptNamespace = uuid.MustParse("5b0f3c1e-8f6a-4d2b-9c57-3e1f0a6d2b84")

// newAttemptID is a workflow-generated attempt UUID (also the device-side
// update ID where the device takes one): under changeBookkeepingV2 derived
// from the run ID and the run's count of attempt IDs, before it a
// SideEffect's random UUID.
func (l *lifecycle) newAttemptID(ctx workflow.Context) (uuid.UUID, error) {
	if bookkeepingV2(ctx) {
		l.attemptIDs++
		run := workflow.GetInfo(ctx).WorkflowExecution.RunID
		return uuid.NewSHA1(attemptNamespace, []byte(run+"/"+strconv.Itoa(l.attemptIDs))), nil
	}
	var id uuid.UUID
	err := workflow.SideEffect(ctx, func(workflow.Context) any { return uuid.New() }).Get(&id)
	return id, err
}
