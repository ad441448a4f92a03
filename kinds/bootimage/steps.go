package bootimage

import (
	"fmt"
	"sort"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func (b *bootImageBump) waitPreconditions(ctx workflow.Context) error {
	b.life.Phase(ctx, bumpPhasePreconditions)
	var a *BootImageActivities
	actx := bumpWaitOptions(ctx, b.in.PreconditionTimeout, "wait until "+b.in.Cluster+" is not upgrading and its golden record is stamped")
	err := workflow.ExecuteActivity(actx, a.WaitBootImagePreconditions, BootImagePreconditionsInput{
		Cluster: b.in.Cluster, Release: b.in.Release,
		Deadline:     workflow.Now(ctx).Add(b.in.PreconditionTimeout),
		PollInterval: b.in.PollInterval,
	}).Get(ctx, &b.snap)
	if err != nil {
		return err
	}
	b.result.Release, b.result.Waited = b.snap.Release, b.snap.Waited
	b.result.BootImageVersion = b.snap.Record.OCPVersion
	b.progress.Artifact = b.snap.Release
	if err := workflow.UpsertTypedSearchAttributes(ctx, workflows.SAArtifact.ValueSet(b.snap.Release)); err != nil {
		workflow.GetLogger(ctx).Warn("upsert artifact failed", "error", err)
	}
	b.event(ctx, "preconditions", "running", fmt.Sprintf("cluster at %s, golden record stamped (waited for: %s)", b.snap.Release, strings.Join(b.snap.Waited, "; ")))
	return nil
}

func (b *bootImageBump) plan(ctx workflow.Context) ([]machineapi.Plan, error) {
	b.life.Phase(ctx, bumpPhasePlanning)
	var a *BootImageActivities
	var res BootImagePlanResult
	err := workflow.ExecuteActivity(bumpAPIOptions(ctx, "plan MachineSets of "+b.in.Cluster), a.PlanBootImages, BootImagePlanInput{
		Cluster: b.in.Cluster, Release: b.snap.Release, Selection: b.in.Selection, Selector: b.in.Selector,
		FromCluster: true,
	}).Get(ctx, &res)
	if err != nil {
		return nil, err
	}
	b.in.Selection, b.in.Selector = res.OptIn.Mode, res.OptIn.Selector
	b.result.OptIn = &res.OptIn
	b.result.MCOManaged = res.MCOManaged
	b.result.Owner = ownerFleetsaga
	if res.MCO {
		b.result.Owner = ownerMCO
		b.event(ctx, "owner", "running", fmt.Sprintf(
			"the MCO's boot image controller owns the opted-in MachineSets (MachineConfiguration %s, %s): fleetsaga reports them and does not patch them (%d: %s)",
			res.OptIn.Source, res.OptIn.Mode, len(res.MCOManaged), strings.Join(res.MCOManaged, ", ")))
	}
	b.progress.Total = int64(len(res.Plans))
	counts := map[machineapi.Action]int{}
	for _, p := range res.Plans {
		counts[p.Action]++
	}
	b.event(ctx, "plan", "running", fmt.Sprintf("%d selected: %d to patch, %d up to date, %d skipped, %d refused",
		len(res.Plans), counts[machineapi.ActionPatch], counts[machineapi.ActionUpToDate], counts[machineapi.ActionSkip], counts[machineapi.ActionRefuse]))
	return res.Plans, nil
}

// Who writes the selected MachineSets' boot images (BootImageBumpResult.Owner).
const (
	ownerMCO       = "mco"
	ownerFleetsaga = "fleetsaga"
)

// ownerDetail is the Web UI's detail line: who writes the boot images.
func ownerDetail(owner string, managed int) string {
	switch owner {
	case ownerMCO:
		return fmt.Sprintf("owner mco: the MCO patches the %d MachineSets it manages, fleetsaga does not", managed)
	case ownerFleetsaga:
		return "owner fleetsaga: no boot image controller resolved the opt-in"
	}
	return ""
}

// awaitMCO waits for the MCO to bring the MachineSets it manages to the
// golden image (the operator asked: AwaitMCO); the ones it does not are
// failed members. fleetsaga only reads them.
func (b *bootImageBump) awaitMCO(ctx workflow.Context) error {
	b.life.Phase(ctx, bumpPhaseAwaitingMCO, fmt.Sprintf("%d MachineSets the MCO manages", len(b.result.MCOManaged)))
	var a *BootImageActivities
	var res BootImageAwaitMCOResult
	actx := bumpWaitOptions(ctx, b.in.PreconditionTimeout, "wait for the MCO to patch "+strings.Join(b.result.MCOManaged, ", "))
	if err := workflow.ExecuteActivity(actx, a.AwaitMCOBootImages, BootImageAwaitMCOInput{
		Cluster: b.in.Cluster, Release: b.snap.Release, MachineSets: b.result.MCOManaged,
		Deadline: workflow.Now(ctx).Add(b.in.PreconditionTimeout), PollInterval: b.in.PollInterval,
	}).Get(ctx, &res); err != nil {
		return err
	}
	b.result.MCOReconciled = res.Reconciled
	for _, m := range res.NotReconciled {
		b.result.Failed = append(b.result.Failed, m)
	}
	b.event(ctx, "mco", "running", fmt.Sprintf("the MCO reconciled %d of %d MachineSets it manages", len(res.Reconciled), len(b.result.MCOManaged)))
	return nil
}

func (b *bootImageBump) done(kind string) {
	b.progress.Done++
	b.progress.Counts[kind]++
}

func (b *bootImageBump) skip(p machineapi.Plan) {
	b.result.Skipped = append(b.result.Skipped, BootImageMember{MachineSet: p.MachineSet, Reason: string(p.Reason), Detail: p.Detail})
	b.done("skipped")
}

func (b *bootImageBump) failMember(name, reason, detail string) {
	b.result.Failed = append(b.result.Failed, BootImageMember{MachineSet: name, Reason: reason, Detail: detail})
	b.done("failed")
}

// reconcileAll reconciles the plans with bounded concurrency.
func (b *bootImageBump) reconcileAll(ctx workflow.Context, plans []machineapi.Plan) {
	b.life.Phase(ctx, bumpPhasePatching, ownerDetail(b.result.Owner, len(b.result.MCOManaged)))
	running := 0
	wg := workflow.NewWaitGroup(ctx)
	for _, p := range plans {
		switch p.Action {
		case machineapi.ActionSkip:
			b.skip(p)
			continue
		case machineapi.ActionRefuse:
			b.failMember(p.MachineSet, string(p.Reason), p.Detail)
			continue
		case machineapi.ActionUpToDate:
			b.result.UpToDate = append(b.result.UpToDate, p.MachineSet)
			b.done("done")
			continue
		}
		if err := workflow.Await(ctx, func() bool { return running < b.in.Concurrency }); err != nil {
			break
		}
		running++
		b.progress.Counts["running"] = running
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			b.reconcileOne(ctx, p)
			running--
			b.progress.Counts["running"] = running
		})
	}
	wg.Wait(ctx)
	sort.Strings(b.result.Patched)
	sort.Strings(b.result.UpToDate)
	sort.Strings(b.result.HotLoop)
	sort.Slice(b.result.Failed, func(i, j int) bool { return b.result.Failed[i].MachineSet < b.result.Failed[j].MachineSet })
	sort.Slice(b.result.Skipped, func(i, j int) bool { return b.result.Skipped[i].MachineSet < b.result.Skipped[j].MachineSet })
}

// reconcileOne patches one MachineSet and watches for another actor
// reverting it (the hot-loop guard).
func (b *bootImageBump) reconcileOne(ctx workflow.Context, p machineapi.Plan) {
	name := p.MachineSet
	// Register the restore before the first patch: if a worker dies right
	// after the patch lands, the retry sees "up to date" and never reports
	// the previous image. The restore only acts on our image.
	b.applied[name] = [2]machineapi.BootImage{p.Current, p.Desired}
	b.life.BeforeAction("restore boot image of "+name, func(ctx workflow.Context) error {
		imgs := b.applied[name]
		return b.restoreImage(ctx, name, imgs[0], imgs[1])
	})
	if _, err := b.recordChange(ctx, BootImageChange{MachineSet: name, Change: ledger.BootImageChangeImage, Previous: p.Current, Applied: p.Desired}); err != nil {
		if ctx.Err() == nil {
			b.failMember(name, bumpReasonError, failure.Line(err))
		}
		return
	}
	var a *BootImageActivities
	applied := 0
	for {
		var r BootImageReconcileResult
		err := workflow.ExecuteActivity(b.bumpChangeOptions(ctx, "reconcile boot image of "+name), a.ReconcileBootImage, BootImageReconcileInput{
			Cluster: b.in.Cluster, MachineSet: name, Release: b.snap.Release, CheckOnly: applied >= b.in.HotLoopLimit,
		}).Get(ctx, &r)
		if err != nil {
			if ctx.Err() == nil {
				b.failMember(name, bumpReasonError, failure.Line(err))
				b.event(ctx, "error-"+name, "failed", failure.Line(err))
			}
			return
		}
		switch r.Action {
		case ReconcilePatched:
			applied++
			b.applied[name] = [2]machineapi.BootImage{b.applied[name][0], r.Plan.Desired}
			b.event(ctx, fmt.Sprintf("patch-%s-%d", name, applied), "running",
				fmt.Sprintf("%s: %s -> %s (conflicts retried: %d)", name, r.Plan.Current.Ref(), r.Plan.Desired.Ref(), r.Conflicts))
			if err := workflow.Sleep(ctx, b.in.SettleInterval); err != nil {
				return
			}
		case ReconcileNeedsPatch:
			msg := fmt.Sprintf("another actor is reverting this MachineSet: the same patch (%s) was applied %d times", r.Plan.Desired.Ref(), applied)
			b.result.HotLoop = append(b.result.HotLoop, name)
			b.failMember(name, bumpReasonHotLoop, msg)
			b.event(ctx, "hotloop-"+name, "failed", msg)
			return
		case string(machineapi.ActionUpToDate):
			if applied > 0 || p.Action == machineapi.ActionPatch {
				b.result.Patched = append(b.result.Patched, name)
			} else {
				b.result.UpToDate = append(b.result.UpToDate, name)
			}
			b.done("done")
			return
		case string(machineapi.ActionSkip):
			b.skip(r.Plan)
			return
		default:
			b.failMember(name, string(r.Plan.Reason), r.Plan.Detail)
			return
		}
	}
}

// restoreImage puts previous back on a MachineSet that still has applied.
func (b *bootImageBump) restoreImage(ctx workflow.Context, name string, previous, applied machineapi.BootImage) error {
	var a *BootImageActivities
	var out string
	err := workflow.ExecuteActivity(bumpAPIOptions(ctx, "restore boot image of "+name), a.RestoreBootImage, BootImageRestoreInput{
		Cluster: b.in.Cluster, MachineSet: name, Previous: previous, Applied: applied,
	}).Get(ctx, &out)
	if err != nil {
		out = "error: " + failure.Line(err)
	}
	b.result.Restored = append(b.result.Restored, name+": "+out)
	b.event(ctx, "restore-"+name, "running", name+": "+out)
	return err
}

// record notes whether every selected MachineSet reconciled cleanly. The
// machine-config operator records the boot image version
// (status.bootImageSkewEnforcementStatus) itself once the MachineSets are
// current; a second writer would fight it.
func (b *bootImageBump) record(ctx workflow.Context) {
	clean := b.in.Selection != SelectNone && len(b.result.Skipped) == 0 && len(b.result.Failed) == 0
	if !clean {
		b.event(ctx, "record", "running", fmt.Sprintf("boot image version stays %s: %d skipped, %d failed",
			b.snap.Record.OCPVersion, len(b.result.Skipped), len(b.result.Failed)))
		return
	}
	b.event(ctx, "record", "running", "every selected MachineSet is current; the machine-config operator records the boot image version")
}
