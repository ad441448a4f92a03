package bootimage

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// BootImageBump brings a cluster's MachineSets to its release's golden boot
// images and enforces the boot image skew (docs/CONFORMANCE.md §G):
//
//  1. record intent in the ledger;
//  2. wait (bounded) until the cluster is not installing/upgrading and the
//     golden record is stamped for its current release;
//  3. plan every selected MachineSet: skip (counted, not an error) owned,
//     Windows, unsupported OS stream, custom image, unknown arch on a
//     multi-arch cluster; refuse a RHEL major mismatch;
//  4. patch each outdated one (merge patch with its resourceVersion; a
//     conflict is retried on a fresh read), then look again after a settle
//     interval: one that needs the same patch again after HotLoopLimit
//     patches is being reverted by another actor: stop and report it;
//  5. optional canary: scale one patched MachineSet up by one and wait for
//     the machine to join; if it does not, restore the previous image on
//     every MachineSet patched in this run and scale the canary back down
//     (the same compensations run if the bump is cancelled). Each patch and
//     scale-up is written to the ledger before it is made, and the changes
//     of a terminated bump of the cluster are adopted into this rollback
//     (adopt.go);
//  6. record the cluster's boot image version only if every selected
//     MachineSet reconciled with nothing skipped and nothing failed;
//  7. evaluate the skew (Automatic / Manual / None) and set the
//     Upgradeable condition.
func BootImageBump(ctx workflow.Context, in BootImageBumpInput) (BootImageBumpResult, error) {
	b := &bootImageBump{in: in}
	if err := b.setup(ctx); err != nil {
		return b.result, err
	}
	return b.run(ctx)
}

type bootImageBump struct {
	in        BootImageBumpInput
	attemptID uuid.UUID
	progress  BootImageProgress
	result    BootImageBumpResult
	snap      BootImageSnapshot
	life      *workflows.Lifecycle
	// patched in this run, with the image before and after (for the saga).
	applied map[string][2]machineapi.BootImage
	events  int
	// adoptedImages are the MachineSets that abandoned bumps patched, and
	// adoptedScales their canary scale-ups, adopted into this run's
	// rollback (adopt.go).
	adoptedImages []string
	adoptedScales []BootImageChange
}

func (b *bootImageBump) setup(ctx workflow.Context) error {
	if err := b.in.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "InvalidInput", nil)
	}
	b.in.defaults()
	b.applied = map[string][2]machineapi.BootImage{}
	b.result = BootImageBumpResult{Cluster: b.in.Cluster, Release: b.in.Release}
	b.progress = BootImageProgress{Progress: workflows.Progress{
		Kind: workflows.KindBootImageBump, Target: b.in.Target(), Artifact: b.in.Release, Unit: "machinesets",
		Counts: map[string]int{"done": 0, "running": 0, "failed": 0, "skipped": 0},
	}}
	// No phase until the intent is recorded (the first phase is the wait
	// for the preconditions).
	life, err := workflows.NewLifecycle(ctx, &b.progress.Progress, "", workflows.LedgerWriter{}, func() BootImageProgress {
		p := b.progress
		p.Summary = b.result
		return p
	})
	if err != nil {
		return err
	}
	b.life = life
	life.RecordPhaseInLedger()
	return nil
}

func (b *bootImageBump) run(ctx workflow.Context) (BootImageBumpResult, error) {
	if err := b.recordIntent(ctx); err != nil {
		// The ending also ends an attempt whose write is in doubt.
		b.result.Outcome = "Failed"
		return b.result, b.end(ctx, err)
	}
	if err := b.adoptAbandoned(ctx); err != nil {
		return b.fail(ctx, "Failed", err)
	}
	if err := b.waitPreconditions(ctx); err != nil {
		return b.fail(ctx, "Failed", err)
	}
	plans, err := b.plan(ctx)
	if err != nil {
		return b.fail(ctx, "Failed", err)
	}
	if b.in.Selection == SelectNone {
		b.result.Outcome = "NothingSelected"
	}
	b.reconcileAll(ctx, plans)
	if ctx.Err() != nil {
		return b.cancelled(ctx)
	}
	if b.in.AwaitMCO && len(b.result.MCOManaged) > 0 {
		if err := b.awaitMCO(ctx); err != nil {
			if ctx.Err() != nil {
				return b.cancelled(ctx)
			}
			return b.fail(ctx, "Failed", err)
		}
	}
	if b.in.Canary != nil {
		ok, err := b.canary(ctx)
		if ctx.Err() != nil {
			return b.cancelled(ctx)
		}
		if err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("canary on %s did not join: %s", b.result.Canary.MachineSet, b.result.Canary.Detail)
			}
			return b.fail(ctx, "CanaryFailed", err)
		}
	}
	b.releaseAdoptedCanaries(ctx)
	if ctx.Err() != nil {
		return b.cancelled(ctx)
	}
	b.record(ctx)
	b.enforceSkew(ctx)
	switch {
	case len(b.result.Failed) > 0:
		return b.fail(ctx, "Failed", fmt.Errorf("%d MachineSet(s) failed: %s", len(b.result.Failed), memberList(b.result.Failed)))
	case b.in.Selection == SelectNone:
	case len(b.result.Skipped) > 0:
		b.result.Outcome = "ReconciledWithSkips"
	default:
		b.result.Outcome = "Reconciled"
	}
	return b.result, b.end(ctx, nil)
}

func memberList(ms []BootImageMember) string {
	var parts []string
	for _, m := range ms {
		parts = append(parts, m.MachineSet+" ("+m.Reason+")")
	}
	return strings.Join(parts, ", ")
}

// --- activity options ---

func bumpAPIOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    2 * time.Minute,
		ScheduleToCloseTimeout: 20 * time.Minute,
		RetryPolicy:            workflows.DeviceRetry,
		Summary:                summary,
	})
}

func bumpWaitOptions(ctx workflow.Context, bound time.Duration, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    bound + 2*time.Minute,
		ScheduleToCloseTimeout: bound + 10*time.Minute,
		HeartbeatTimeout:       time.Minute,
		RetryPolicy:            workflows.DeviceRetry,
		Summary:                summary,
	})
}

// bumpChangeOptions are for activities that change a MachineSet (patch,
// scale). On cancel the workflow waits until the activity has ended (it
// heartbeats, so it hears of the cancel between calls): otherwise the
// restore could look first, find nothing to undo, and the in-flight change
// land after it.
func (b *bootImageBump) bumpChangeOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    2 * time.Minute,
		ScheduleToCloseTimeout: 20 * time.Minute,
		HeartbeatTimeout:       30 * time.Second,
		WaitForCancellation:    true,
		RetryPolicy:            workflows.DeviceRetry,
		Summary:                summary,
	})
}

// --- steps ---

// event appends one ledger event; steps are numbered so each is unique.
func (b *bootImageBump) event(ctx workflow.Context, step, state, msg string) {
	b.events++
	var l *activities.LedgerActivities
	_ = workflow.ExecuteActivity(workflows.LedgerOptions(ctx), l.AppendEvent, ledger.Event{
		AttemptID: b.attemptID, Step: fmt.Sprintf("%03d-%s", b.events, step), State: state, Message: msg,
	}).Get(ctx, nil)
}

func (b *bootImageBump) recordIntent(ctx workflow.Context) error {
	err := b.life.RecordIntent(ctx, b.life.FreshAttempt(ctx, 1, workflows.KindBootImageBump, b.in.Target(), b.in.Release))
	b.attemptID = b.life.AttemptID()
	return err
}

// end ends the bump through the lifecycle: compensations (if any are
// left), the ledger end with the summary, the search state.
func (b *bootImageBump) end(ctx workflow.Context, err error) error {
	b.progress.Counts["running"] = 0
	summary := fmt.Sprintf("%s: %d patched, %d up to date, %d skipped, %d failed; upgradeable=%v (%s)",
		b.result.Outcome, len(b.result.Patched), len(b.result.UpToDate), len(b.result.Skipped), len(b.result.Failed),
		b.result.Skew.Upgradeable, b.result.Skew.Reason)
	err = b.life.End(ctx, err, workflows.Ending{Outcome: summary, FailedOutcome: summary, Phase: bumpPhaseDone})
	sort.Strings(b.result.Restored)
	return err
}

// fail ends the bump as failed. Only a failed canary rolls this run's
// patches back; other failures keep the MachineSets that
// reached the golden image.
func (b *bootImageBump) fail(ctx workflow.Context, outcome string, err error) (BootImageBumpResult, error) {
	if ctx.Err() != nil {
		return b.cancelled(ctx)
	}
	if outcome == "CanaryFailed" {
		b.rollingBack(ctx)
	} else {
		b.life.NothingToUndo()
	}
	b.result.Outcome = outcome
	_ = b.end(ctx, err)
	return b.result, temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("boot image bump of %s: %s: %v", b.in.Cluster, outcome, err), "BootImageBump"+outcome, err, b.result)
}

// cancelled undoes this run's patches and canary, then ends as cancelled.
func (b *bootImageBump) cancelled(ctx workflow.Context) (BootImageBumpResult, error) {
	b.rollingBack(ctx)
	b.result.Outcome = "Cancelled"
	_ = b.end(ctx, temporal.NewCanceledError())
	return b.result, temporal.NewCanceledError(b.result)
}
