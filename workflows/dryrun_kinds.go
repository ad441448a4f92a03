package workflows

import (
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// PlanRow is one row of a dry run (see activities.PlanRow).
type PlanRow = activities.PlanRow

// updatePlan is one update's dry run: its rows, and what the estimate
// needs (how many devices it changes at once, how long one takes).
type UpdatePlan struct {
	Rows   []PlanRow
	Inner  int           // devices the update changes at once (1: the target itself)
	Device time.Duration // one device's change (KindInfo.DeviceTime)
}

// duration is how long the update's changes take at its own concurrency.
func (p UpdatePlan) Duration(changes int) time.Duration {
	if changes == 0 {
		return 0
	}
	inner := max(p.Inner, 1)
	return time.Duration((changes+inner-1)/inner) * p.Device
}

// Nil receivers naming the read-only activities a dry run calls.
var (
	planMGS   *activities.MGSActivities
	planAgent *activities.AgentActivities
)

// planOptions: a dry run reads; a device that does not answer after a few
// tries is reported, not waited for.
func PlanOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		// A worker without the kind's endpoints never picks it up.
		ScheduleToCloseTimeout: 5 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 3},
		Summary:                "dry run: " + summary,
	})
}

// unreadable is the row of a target whose precheck failed after its
// retries: a refusal (the update would not get further either).
func Unreadable(row PlanRow, err error) []PlanRow {
	return []PlanRow{refusal(row, err)}
}

// refusal fills a row's refusal from a precheck's error.
func refusal(row PlanRow, err error) PlanRow {
	reason, fatal := activities.RefusalReason(err)
	if !fatal {
		reason = "cannot read the device: " + reason
	}
	row.Action, row.Reason = activities.PlanRefuse, reason
	return row
}

func PlanSPFirmware(ctx workflow.Context, in SPFirmwareInput) UpdatePlan {
	p := UpdatePlan{Inner: 1}
	row := PlanRow{Desired: in.Artifact.Version}
	var pre activities.PrecheckResult
	err := workflow.ExecuteActivity(PlanOptions(ctx, "precheck "+in.Target()), planMGS.MGSPrecheck,
		activities.PrecheckInput{SP: in.SP.id(), Component: mgs.ComponentSP, Artifacts: []Artifact{in.Artifact}}).Get(ctx, &pre)
	if err != nil {
		p.Rows = Unreadable(row, err)
		return p
	}
	row.Current = slotVersion(pre.Active)
	idErr, verErr := checkIdentity(in.SP, pre), checkVersions(in.Artifact.Version, in.ExpectedActive, in.ExpectedInactive, pre)
	switch {
	case idErr != nil:
		row = refusal(row, idErr)
	case pre.Active.Valid && pre.Active.Version == in.Artifact.Version:
		row.Action = activities.PlanAtTarget
	case verErr != nil:
		row = refusal(row, verErr)
	default:
		row = mgsBusyOrUpdate(row, pre)
	}
	p.Rows = []PlanRow{row}
	return p
}

func PlanHostFlash(ctx workflow.Context, in HostFlashInput) UpdatePlan {
	p := UpdatePlan{Inner: 1}
	row := PlanRow{Desired: in.Phase1.Version + " (phase 1 " + short(in.Phase1.SHA256) + ")"}
	var pre activities.PrecheckResult
	err := workflow.ExecuteActivity(PlanOptions(ctx, "precheck "+in.Target()+" host flash"), planMGS.MGSPrecheck,
		activities.PrecheckInput{SP: in.Sled.id(), Component: mgs.ComponentHostBootFlash, Artifacts: []Artifact{in.Phase1, in.Phase2}}).Get(ctx, &pre)
	if err != nil {
		p.Rows = Unreadable(row, err)
		return p
	}
	row.Current = "phase 1 " + short(hostSlotVersion(pre.Active))
	idErr, slotErr := checkIdentity(in.Sled, pre), checkHostSlots(in, pre)
	switch {
	case idErr != nil:
		row = refusal(row, idErr)
	case strings.EqualFold(pre.Active.SHA256, in.Phase1.SHA256):
		row.Action = activities.PlanAtTarget
	case slotErr != nil:
		row = refusal(row, slotErr)
	default:
		row = mgsBusyOrUpdate(row, pre)
	}
	p.Rows = []PlanRow{row}
	return p
}

// mgsBusyOrUpdate: an SP working on another update is busy (the update
// would wait for it, or take it over); otherwise the update goes ahead.
func mgsBusyOrUpdate(row PlanRow, pre activities.PrecheckResult) PlanRow {
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

func PlanAgentInstall(ctx workflow.Context, in AgentInstallInput) UpdatePlan {
	p := UpdatePlan{Inner: in.Concurrency}
	if p.Inner == 0 {
		p.Inner = DefaultAgentConcurrency
	}
	err := workflow.ExecuteActivity(PlanOptions(ctx, "plan "+in.Target()), planAgent.PlanAgentInstallDry, activities.PlanAgentInstallRequest{
		Agents: in.Agents, AllAgents: in.AllAgents, Selection: in.Selection, ExcludeServers: in.ExcludeServers, ExcludeAgents: in.ExcludeAgents,
	}).Get(ctx, &p.Rows)
	if err != nil {
		p.Rows = Unreadable(PlanRow{Device: "(request)"}, err)
	}
	return p
}

func PlanAgentDrift(ctx workflow.Context, in AgentDriftInput) UpdatePlan {
	p := UpdatePlan{Inner: in.Concurrency}
	if p.Inner == 0 {
		p.Inner = DefaultAgentConcurrency
	}
	err := workflow.ExecuteActivity(PlanOptions(ctx, "check "+in.Target()), planAgent.PlanAgentDrift, activities.FindAgentDriftRequest{
		Agents: in.Agents, Selection: in.Selection, ExcludeServers: in.ExcludeServers,
	}, in.Repair).Get(ctx, &p.Rows)
	if err != nil {
		p.Rows = Unreadable(PlanRow{Device: "(request)"}, err)
	}
	return p
}
