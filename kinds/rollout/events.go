package rollout

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// eventLog is the rollout's decisions in the ledger (rollout_event rows:
// gate rounds, aborts, pauses, waits), counted per run.
type eventLog struct {
	n int // rows written by this run (or by the run before a reset)
}

// rolloutEventOptions: a ledger write takes milliseconds; the database
// may restart, so it is retried for a while.
func rolloutEventOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second, ScheduleToCloseTimeout: 5 * time.Minute, RetryPolicy: workflows.LedgerRetry,
		Summary: summary,
	})
}

// record writes a decision to the ledger and returns the one the
// ledger holds for that point (RolloutActivities.RecordRolloutEvent): e,
// or what the run before an operator's reset decided there. A ledger down
// for longer than the retries leaves the decision in the history and the
// progress query, and the rollout goes on deciding: a gate must not wait
// on its own record.
func (l *eventLog) record(ctx workflow.Context, stage, kind, verdict, reason string, detail any, shadow bool) ledger.RolloutEvent {
	l.n++
	e := ledger.RolloutEvent{Rollout: workflow.GetInfo(ctx).WorkflowExecution.ID, RunID: workflow.GetInfo(ctx).OriginalRunID,
		Seq: l.n, Stage: stage, Kind: kind, Verdict: verdict, Reason: reason, Shadow: shadow, At: workflow.Now(ctx)}
	if detail != nil {
		// A struct's or a slice's JSON depends on its values alone
		// (workflowcheck flags the reflection encoding/json uses).
		//workflowcheck:ignore
		e.Detail, _ = json.Marshal(detail)
	}
	var a *RolloutActivities
	var got ledger.RolloutEvent
	if err := workflow.ExecuteActivity(rolloutEventOptions(ctx, "record "+kind+" of stage "+stage), a.RecordRolloutEvent, e).Get(ctx, &got); err != nil {
		workflow.GetLogger(ctx).Warn("rollout event not recorded in the ledger", "kind", kind, "error", err)
		return e
	}
	if got.Seq == 0 {
		return e // recorded by a build whose activity returned nothing
	}
	// Kept after the rows of a run before a reset: count on from there.
	l.n = max(l.n, got.Seq)
	return got
}
