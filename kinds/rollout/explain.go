package rollout

import (
	"encoding/json"
	"sort"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// ExplainQuery answers "why is this rollout not moving" (starter explain).
const ExplainQuery = "explain"

// WaitReason is what a rollout waits for.
type WaitReason string

const (
	WaitRunning  WaitReason = "running"  // updates run; nothing holds it
	WaitApproval WaitReason = "approval" // a gate needs approvals
	WaitGate     WaitReason = "gate"     // a health gate is watching a batch
	WaitWindow   WaitReason = "window"   // outside the maintenance windows
	WaitFreeze   WaitReason = "freeze"   // a change freeze
	WaitPaused   WaitReason = "paused"   // paused (by an operator, or inconclusive health)
	WaitStopped  WaitReason = "stopped"  // a gate or a threshold aborted it
)

// Explanation is the rollout's one answer to "why is this not moving".
type Explanation struct {
	Waiting WaitReason `json:"waiting"`
	Stage   string     `json:"stage,omitempty"`
	Reason  string     `json:"reason"`
	Since   time.Time  `json:"since,omitzero"`
	// Gate is the last health gate round.
	Gate *GateStatus `json:"gate,omitempty"`
	// Running are the updates running now, longest first: a stalled
	// device is the first.
	Running []RunningUpdate `json:"running,omitempty"`
	// Batch is the current batch size of a ramped or gated stage.
	Batch int `json:"batch,omitempty"`
}

// RunningUpdate is one update running now.
type RunningUpdate struct {
	Target string    `json:"target"`
	Since  time.Time `json:"since"`
}

// explain is the query's answer: approvals and operator pauses come from
// the rollout's own state (also for rollouts without issue 30's fields),
// the rest from what the gated stage last said.
func (r *rollout) explain() Explanation {
	e := r.why
	switch {
	case r.gate != "":
		e = Explanation{Waiting: WaitApproval, Stage: r.gate, Reason: "stage " + r.gate + " waits for approval (starter approve)", Since: r.progress.PhaseSince}
		if r.gatePlan != nil && r.gatePlan.StillNeeded != "" {
			e.Reason += "; still needed: " + r.gatePlan.StillNeeded
		}
	case r.paused && e.Waiting != WaitPaused:
		e = Explanation{Waiting: WaitPaused, Stage: e.Stage, Reason: "paused by an operator (starter resume)"}
	case e.Waiting == "":
		e = Explanation{Waiting: WaitRunning, Reason: r.progress.Message, Since: r.progress.PhaseSince}
	}
	e.Gate = r.gateStatus
	e.Batch = r.rampSize
	for _, t := range workflow.DeterministicKeys(r.startedAt) {
		e.Running = append(e.Running, RunningUpdate{Target: t, Since: r.startedAt[t]})
	}
	sort.Slice(e.Running, func(i, j int) bool {
		if !e.Running[i].Since.Equal(e.Running[j].Since) {
			return e.Running[i].Since.Before(e.Running[j].Since)
		}
		return e.Running[i].Target < e.Running[j].Target
	})
	return e
}

// explainWaiting says what the rollout waits for now.
func (r *rollout) explainWaiting(ctx workflow.Context, w WaitReason, stage, reason string) {
	if r.why.Waiting == w && r.why.Reason == reason {
		return
	}
	r.why = Explanation{Waiting: w, Stage: stage, Reason: reason, Since: workflow.Now(ctx)}
}

// explainStopped says the rollout stopped itself, and why.
func (r *rollout) explainStopped(ctx workflow.Context, stage, reason string) {
	r.explainWaiting(ctx, WaitStopped, stage, reason)
}

// rolloutEventOptions: a ledger write takes milliseconds; the database
// may restart, so it is retried for a while.
func rolloutEventOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second, ScheduleToCloseTimeout: 5 * time.Minute, RetryPolicy: workflows.LedgerRetry,
		Summary: summary,
	})
}

// recordEvent writes a decision to the ledger and returns the one the
// ledger holds for that point (RolloutActivities.RecordRolloutEvent): e,
// or what the run before an operator's reset decided there. A ledger down
// for longer than the retries leaves the decision in the history and the
// progress query, and the rollout goes on deciding: a gate must not wait
// on its own record.
func (r *rollout) recordEvent(ctx workflow.Context, stage, kind, verdict, reason string, detail any, shadow bool) ledger.RolloutEvent {
	r.events++
	e := ledger.RolloutEvent{Rollout: workflow.GetInfo(ctx).WorkflowExecution.ID, RunID: workflow.GetInfo(ctx).OriginalRunID,
		Seq: r.events, Stage: stage, Kind: kind, Verdict: verdict, Reason: reason, Shadow: shadow, At: workflow.Now(ctx)}
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
	r.events = max(r.events, got.Seq)
	return got
}
