package zoneexpunge

import (
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// PlanZoneExpunge is the expunge's dry run: its precheck, read-only (the
// ledger disposition, the sled's config and the rack's Nexus zones).
func PlanZoneExpunge(ctx workflow.Context, in ZoneExpungeInput) workflows.UpdatePlan {
	p := workflows.UpdatePlan{Inner: 1}
	var row workflows.PlanRow
	err := workflow.ExecuteActivity(workflows.PlanOptions(ctx, "precheck "+in.Target()), planZone.PlanZoneExpunge, ZonePrecheckInput{
		UpdateID: workflows.WorkflowID(workflows.KindZoneExpunge, in.Target()), Sled: in.Sled, Zone: in.Zone, RackSleds: in.RackSleds,
	}).Get(ctx, &row)
	if err != nil {
		p.Rows = workflows.Unreadable(workflows.PlanRow{Desired: "expunged"}, err)
		return p
	}
	p.Rows = []workflows.PlanRow{row}
	return p
}

// planZone names the read-only activity a zone expunge's dry run calls.
var planZone *ZoneActivities
