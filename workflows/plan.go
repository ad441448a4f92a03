package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
)

// PlanRow is one row of a dry run (see activities.PlanRow).
type PlanRow = activities.PlanRow

// UpdatePlan is one update's dry run: its rows, and what the estimate
// needs (how many devices it changes at once, how long one takes).
type UpdatePlan struct {
	Rows   []PlanRow
	Inner  int           // devices the update changes at once (1: the target itself)
	Device time.Duration // one device's change (KindInfo.DeviceTime)
}

// Duration is how long the update's changes take at its own concurrency.
func (p UpdatePlan) Duration(changes int) time.Duration {
	if changes == 0 {
		return 0
	}
	inner := max(p.Inner, 1)
	return time.Duration((changes+inner-1)/inner) * p.Device
}

// PlanOptions: a dry run reads; a device that does not answer after a few
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

// Unreadable is the row of a target whose precheck failed after its
// retries: a refusal (the update would not get further either).
func Unreadable(row PlanRow, err error) []PlanRow {
	return []PlanRow{Refusal(row, err)}
}

// Refusal fills a row's refusal from a precheck's error.
func Refusal(row PlanRow, err error) PlanRow {
	reason, fatal := activities.RefusalReason(err)
	if !fatal {
		reason = "cannot read the device: " + reason
	}
	row.Action, row.Reason = activities.PlanRefuse, reason
	return row
}
