package mgsupdate

import (
	"strconv"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func PlanSPFirmware(ctx workflow.Context, in SPFirmwareInput) workflows.UpdatePlan {
	p := workflows.UpdatePlan{Inner: 1}
	row := workflows.PlanRow{Desired: in.Artifact.Version}
	var pre PrecheckResult
	err := workflow.ExecuteActivity(workflows.PlanOptions(ctx, "precheck "+in.Target()), planMGS.MGSPrecheck,
		PrecheckInput{SP: in.SP.id(), Component: mgs.ComponentSP, Artifacts: []Artifact{in.Artifact}, RackRelease: true}).Get(ctx, &pre)
	if err != nil {
		p.Rows = workflows.Unreadable(row, err)
		return p
	}
	row.Current = slotVersion(pre.Active)
	idErr, verErr := checkIdentity(in.SP, pre), checkVersions(in.Artifact.Version, in.ExpectedActive, in.ExpectedInactive, pre)
	switch {
	case idErr != nil:
		row = workflows.Refusal(row, idErr)
	case pre.Active.Valid && pre.Active.Version == in.Artifact.Version:
		row.Action = activities.PlanAtTarget
	case verErr != nil:
		row = workflows.Refusal(row, verErr)
	default:
		row = mgsBusyOrUpdate(row, pre)
	}
	p.Rows = []workflows.PlanRow{row}
	return p
}

func PlanHostFlash(ctx workflow.Context, in HostFlashInput) workflows.UpdatePlan {
	p := workflows.UpdatePlan{Inner: 1}
	row := workflows.PlanRow{Desired: in.Phase1.Version + " (phase 1 " + short(in.Phase1.SHA256) + ")"}
	var pre PrecheckResult
	err := workflow.ExecuteActivity(workflows.PlanOptions(ctx, "precheck "+in.Target()+" host flash"), planMGS.MGSPrecheck,
		PrecheckInput{SP: in.Sled.id(), Component: mgs.ComponentHostBootFlash, Artifacts: []Artifact{in.Phase1, in.Phase2}, RackRelease: true}).Get(ctx, &pre)
	if err != nil {
		p.Rows = workflows.Unreadable(row, err)
		return p
	}
	row.Current = "phase 1 " + short(hostSlotVersion(pre.Active))
	idErr, slotErr := checkIdentity(in.Sled, pre), checkHostSlots(in, pre)
	switch {
	case idErr != nil:
		row = workflows.Refusal(row, idErr)
	case strings.EqualFold(pre.Active.SHA256, in.Phase1.SHA256):
		row.Action = activities.PlanAtTarget
	case slotErr != nil:
		row = workflows.Refusal(row, slotErr)
	default:
		row = mgsBusyOrUpdate(row, pre)
	}
	if row.Action == activities.PlanUpdate {
		row = planZoneSafety(ctx, row, in, pre)
	}
	p.Rows = []workflows.PlanRow{row}
	return p
}

// planZoneSafetyVersion marks the plans that check zone safety: a host
// flash's plan also runs inside the rollout (its gates and drift check),
// an Auto-Upgrade parent a new activity must not surprise on replay. The
// DefaultVersion branch may go once no rollout started before it is open.
const planZoneSafetyVersion = "host-flash-plan-zone-safety"

// planZoneSafety: a host update would reboot the sled; the dry run checks
// its zones once (no wait) and shows a refusal naming the unsafe ones.
func planZoneSafety(ctx workflow.Context, row workflows.PlanRow, in HostFlashInput, pre PrecheckResult) workflows.PlanRow {
	if workflow.GetVersion(ctx, planZoneSafetyVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return row
	}
	err := workflow.ExecuteActivity(workflows.PlanOptions(ctx, "are the zones of "+in.Target()+"'s sled safe to shut down?"), planMGS.HostZoneSafety,
		ZoneSafetyInput{Serial: pre.Serial, SledID: in.SledID}).Get(ctx, nil)
	if err != nil {
		return workflows.Refusal(row, err)
	}
	return row
}

// mgsBusyOrUpdate: an SP working on another update is busy (the update
// would wait for it, or take it over); otherwise the update goes ahead.
func mgsBusyOrUpdate(row workflows.PlanRow, pre PrecheckResult) workflows.PlanRow {
	if pre.Status.InProgress() {
		row.Action, row.Reason = activities.PlanRefuse, "target busy: the SP is working on update "+pre.Status.ID.String()+" ("+pre.Status.String()+"); the update would wait for it"
		return row
	}
	row.Action = activities.PlanUpdate
	return row
}

// short abbreviates a hash for a table cell.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// planMGS names the read-only activities an SP or host dry run calls.
var planMGS *MGSActivities

// PlanHostRecovery is a recovery's dry run: the sled and both images
// read, and what would happen: the trampoline written to the inactive slot
// and booted once. A recovery always boots (there is no "at target").
func PlanHostRecovery(ctx workflow.Context, in HostRecoveryInput) workflows.UpdatePlan {
	p := workflows.UpdatePlan{Inner: 1}
	row := workflows.PlanRow{Desired: "trampoline " + in.Phase1.Version + " (phase 1 " + short(in.Phase1.SHA256) + "), booted once"}
	var pre PrecheckResult
	err := workflow.ExecuteActivity(workflows.PlanOptions(ctx, "precheck "+in.Target()+" host recovery"), planMGS.MGSPrecheck,
		PrecheckInput{SP: in.Sled.id(), Component: mgs.ComponentHostBootFlash, Artifacts: []Artifact{in.Phase1, in.Phase2}}).Get(ctx, &pre)
	if err != nil {
		p.Rows = workflows.Unreadable(row, err)
		return p
	}
	row.Current = "phase 1 " + short(hostSlotVersion(pre.Active)) + " on slot " + strconv.Itoa(int(pre.Active.Slot)) + " (installed, stays persistent)"
	if err := checkIdentity(in.Sled, pre); err != nil {
		row = workflows.Refusal(row, err)
	} else {
		row = mgsBusyOrUpdate(row, pre)
		if row.Action == activities.PlanUpdate {
			row.Reason = "trampoline to slot " + strconv.Itoa(int(pre.Inactive.Slot)) + ", recovery boot, phase 2 through the SP"
		}
	}
	p.Rows = []workflows.PlanRow{row}
	return p
}
