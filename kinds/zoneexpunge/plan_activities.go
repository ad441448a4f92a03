package zoneexpunge

import (
	"context"
	"fmt"
	"strings"

	"github.com/fleetsaga/fleetsaga/activities"
)

// PlanZoneExpunge is a zone expunge's dry run: the expunge's own precheck
// (read-only: inventory, the ledger's disposition and attempts, the rack's
// Nexus zones), turned into one plan row. Nothing is written.
func (a *ZoneActivities) PlanZoneExpunge(ctx context.Context, in ZonePrecheckInput) (activities.PlanRow, error) {
	row := activities.PlanRow{Current: "zone " + in.Zone.String() + " on sled " + in.Sled.String(), Desired: "expunged"}
	pre, err := a.PrecheckZoneExpunge(ctx, in)
	if err != nil {
		return activities.RefuseRow(row, err)
	}
	where := "in its config"
	if !pre.InConfig {
		where = "not in its config"
	}
	if pre.Present {
		where += ", running"
	}
	row.Current = fmt.Sprintf("%s zone, sled generation %d, %s", pre.Kind, pre.LedgeredGeneration, where)
	row.Desired = fmt.Sprintf("expunged as of generation %d", pre.LedgeredGeneration+1)
	switch {
	case pre.Existing != nil && pre.Existing.Completed():
		row.Current = fmt.Sprintf("%s zone expunged as of generation %d (committed)", pre.Existing.Kind, pre.Existing.ExpungedAsOf)
		row.Desired = fmt.Sprintf("expunged as of generation %d", pre.Existing.ExpungedAsOf)
		row.Action, row.Reason = activities.PlanAtTarget, "the ledger has the expunge committed"
	case pre.Existing != nil:
		row.Desired = fmt.Sprintf("expunged as of generation %d", pre.Existing.ExpungedAsOf)
		row.Action, row.Reason = activities.PlanUpdate, "resumes the expunge the ledger started"
	default:
		row.Action = activities.PlanUpdate
		if len(pre.OtherNexus) > 0 {
			row.Reason = fmt.Sprintf("Nexus: its sagas move to one of %d other in-service Nexus zones", len(pre.OtherNexus))
			if pre.Mode == ModeOwner {
				row.Reason = fmt.Sprintf("Nexus (nexus_generation %d): Nexus moves its sagas to another Nexus of that generation", pre.NexusGeneration)
			}
		}
	}
	if pre.Mode != "" {
		who := "fleetsaga writes the sled's config"
		if pre.Mode == ModeOwner {
			who = "through target blueprint " + pre.TargetID.String()
		}
		row.Reason = strings.TrimPrefix(strings.Join([]string{row.Reason, fmt.Sprintf("mode %s (%s): %s", pre.Mode, who, pre.ModeReason)}, "; "), "; ")
	}
	return row, nil
}
