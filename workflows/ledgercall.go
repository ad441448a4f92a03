package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// Ledger writes are local activities: a few milliseconds against
// PostgreSQL that would otherwise cost an activity task, three history
// events and a workflow task each.
const (
	// ledgerWriteTimeout bounds one write: a healthy ledger answers in
	// milliseconds, a stuck connection is retried.
	ledgerWriteTimeout = 10 * time.Second
	// ledgerWriteBound is how long a workflow keeps retrying a write
	// through a database outage before the step fails.
	ledgerWriteBound = 30 * time.Minute
)

// LedgerCall runs a ledger activity as a local activity. Ledger activities
// are idempotent by the IDs in their input, so the re-run of a local
// activity whose workflow task was lost with its worker writes nothing
// twice.
func LedgerCall(ctx workflow.Context, activity, arg any) workflow.Future {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    ledgerWriteTimeout,
		ScheduleToCloseTimeout: ledgerWriteBound,
		RetryPolicy:            LedgerRetry,
	})
	return workflow.ExecuteLocalActivity(lctx, activity, arg)
}
