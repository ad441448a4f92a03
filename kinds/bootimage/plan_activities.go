package bootimage

import (
	"context"
	"errors"
	"fmt"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
)

// PlanBootImageBump is a boot image bump's dry run: the bump's
// preconditions read once (not waited for) and its per-MachineSet plan
// (machineapi.PlanMachineSet, the decision the bump itself applies), one
// row per MachineSet. Nothing is patched or scaled.
func (a *BootImageActivities) PlanBootImageBump(ctx context.Context, in BootImagePlanInput) ([]activities.PlanRow, error) {
	cluster := activities.PlanRow{Device: "(cluster)", Current: "cluster " + in.Cluster, Desired: "golden boot images"}
	c, err := a.client(in.Cluster)
	if err != nil {
		row, err := activities.RefuseRow(cluster, err)
		return []activities.PlanRow{row}, err
	}
	why, snap, err := a.preconditions(ctx, c, in.Release)
	switch {
	case errors.Is(err, errReleaseMismatch):
		cluster.Action, cluster.Reason = activities.PlanRefuse, failure.BootImageRelease+": "+err.Error()
		return []activities.PlanRow{cluster}, nil
	case err != nil:
		row, err := activities.RefuseRow(cluster, classifyKube(err))
		return []activities.PlanRow{row}, err
	case why != "":
		cluster.Action, cluster.Reason = activities.PlanRefuse, "target busy: "+why+" (the bump waits for it, up to its precondition timeout)"
		return []activities.PlanRow{cluster}, nil
	}
	in.Release = snap.Release
	res, err := a.PlanBootImages(ctx, in)
	if err != nil {
		row, err := activities.RefuseRow(cluster, err)
		return []activities.PlanRow{row}, err
	}
	if len(res.Plans) == 0 {
		cluster.Action, cluster.Reason = activities.PlanSkip, fmt.Sprintf("opt-in %s selects no MachineSet", res.OptIn.Mode)
		return []activities.PlanRow{cluster}, nil
	}
	rows := make([]activities.PlanRow, 0, len(res.Plans))
	for _, p := range res.Plans {
		rows = append(rows, bootImageRow(p))
	}
	return rows, nil
}

// bootImageRow is one MachineSet's decision as a plan row.
func bootImageRow(p machineapi.Plan) activities.PlanRow {
	row := activities.PlanRow{Device: "machineset/" + p.MachineSet, Current: p.Current.Ref(), Desired: p.Desired.Ref()}
	switch p.Action {
	case machineapi.ActionPatch:
		row.Action = activities.PlanUpdate
	case machineapi.ActionUpToDate:
		row.Action = activities.PlanAtTarget
	case machineapi.ActionSkip:
		row.Action = activities.PlanSkip
	default:
		row.Action = activities.PlanRefuse
	}
	if p.Reason != "" {
		row.Reason = string(p.Reason) + ": " + p.Detail
	}
	return row
}
