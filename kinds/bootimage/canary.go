package bootimage

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// canary scales one patched MachineSet up by one and waits for the machine.
func (b *bootImageBump) canary(ctx workflow.Context) (bool, error) {
	b.life.Phase(ctx, bumpPhaseCanary)
	name := b.in.Canary.MachineSet
	if name == "" && len(b.result.Patched) == 0 {
		name = b.adoptedCanary() // adopted patches were never proven
	}
	if name == "" {
		if len(b.result.Patched) == 0 {
			b.event(ctx, "canary", "running", "no MachineSet was patched: no canary needed")
			return true, nil
		}
		name = b.result.Patched[0]
	}
	report := &BootImageCanaryReport{MachineSet: name}
	b.result.Canary = report
	imgs, ok := b.applied[name]
	if !ok || !contains(b.result.Patched, name) {
		if contains(b.result.UpToDate, name) {
			report.Detail = "already on the golden image before this run"
		} else {
			report.Detail = "the canary MachineSet was not reconciled by this run"
			return false, nil
		}
	}
	var a *BootImageActivities
	var base CanaryBaseline
	cin := BootImageCanaryInput{Cluster: b.in.Cluster, MachineSet: name}
	if err := workflow.ExecuteActivity(bumpAPIOptions(ctx, "canary baseline of "+name), a.CanaryBaseline, cin).Get(ctx, &base); err != nil {
		return false, err
	}
	if !ok { // up to date already: its image is the golden one it has now
		var r BootImageReconcileResult
		if err := workflow.ExecuteActivity(bumpAPIOptions(ctx, "read image of "+name), a.ReconcileBootImage, BootImageReconcileInput{
			Cluster: b.in.Cluster, MachineSet: name, Release: b.snap.Release, CheckOnly: true,
		}).Get(ctx, &r); err != nil {
			return false, err
		}
		imgs = [2]machineapi.BootImage{r.Plan.Current, r.Plan.Desired}
	}
	scale := func(ctx workflow.Context, from, to int32) error {
		return workflow.ExecuteActivity(b.bumpChangeOptions(ctx, fmt.Sprintf("scale %s %d -> %d", name, from, to)), a.ScaleMachineSet, BootImageScaleInput{
			Cluster: b.in.Cluster, MachineSet: name, From: from, To: to,
		}).Get(ctx, nil)
	}
	up := base.Replicas + 1
	b.life.BeforeAction("scale canary "+name+" back down", func(ctx workflow.Context) error {
		return b.scaleDown(ctx, BootImageScaleInput{Cluster: b.in.Cluster, MachineSet: name, From: up, To: base.Replicas})
	})
	stored, err := b.recordChange(ctx, BootImageChange{MachineSet: name, Change: ledger.BootImageChangeScale, PreviousReplicas: base.Replicas, ScaledReplicas: up})
	if err != nil {
		return false, err
	}
	// A run reset after its canary scaled up reads the scaled replicas as
	// the baseline: the ledger's original stands.
	base.Replicas, up = stored.PreviousReplicas, stored.PreviousReplicas+1
	if err := scale(ctx, base.Replicas, up); err != nil {
		return false, err
	}
	b.event(ctx, "canary-up", "running", fmt.Sprintf("%s scaled %d -> %d to boot %s", name, base.Replicas, up, imgs[1].Ref()))
	var res CanaryResult
	err = workflow.ExecuteActivity(bumpWaitOptions(ctx, b.in.Canary.Timeout, "wait for the canary machine of "+name), a.WaitCanaryJoin, BootImageCanaryWaitInput{
		Cluster: b.in.Cluster, MachineSet: name, Baseline: base.Machines, Image: imgs[1],
		Deadline: workflow.Now(ctx).Add(b.in.Canary.Timeout), PollInterval: b.in.PollInterval,
	}).Get(ctx, &res)
	if err != nil {
		return false, err
	}
	report.Joined, report.Machine, report.Detail = res.Joined, res.Machine, res.Detail
	b.event(ctx, "canary", map[bool]string{true: "running", false: "failed"}[res.Joined], fmt.Sprintf("%s: machine %s: %s", name, res.Machine, res.Detail))
	if !res.Joined {
		return false, nil
	}
	// Proven: the canary machine goes away again (it was a proof, not capacity).
	if err := scale(ctx, up, base.Replicas); err != nil {
		return false, err
	}
	return true, nil
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// rollingBack announces the rollback; the ending runs the compensations
// (restore every MachineSet patched in this run, scale the canary down).
func (b *bootImageBump) rollingBack(ctx workflow.Context) {
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	b.life.Phase(dctx, bumpPhaseRollingBack)
	b.life.LastUndo("undo the changes the ledger holds for this attempt", b.undoRecorded)
}
