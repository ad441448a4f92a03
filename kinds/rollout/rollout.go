package rollout

import (
	"fmt"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// rollout is one run of a plan: its progress and result, and the parts it
// owns, each with its own state (wired in newRollout).
type rollout struct {
	in       RolloutInput
	l        *workflows.Lifecycle
	progress workflows.Progress
	result   RolloutResult
	paused   bool
	moves    *inFlight

	approvals approvalGate
	health    healthGate
	calendar  calendarGate
	notifier  notifier
	adopter   adopter
	why       explainer
	events    eventLog
}

// newRollout wires the parts to what they share.
func newRollout(in RolloutInput) *rollout {
	r := &rollout{in: in, moves: newInFlight()}
	r.approvals = approvalGate{in: &r.in, progress: &r.progress, phase: r.setPhase}
	r.notifier = notifier{spec: r.in.Notify, moves: r.moves}
	r.calendar = calendarGate{spec: r.in.Calendar, moves: r.moves, why: &r.why, events: &r.events, progress: &r.progress, phase: r.setPhase}
	r.health = healthGate{notifier: &r.notifier, why: &r.why, events: &r.events, progress: &r.progress, pause: r.pauseUntilResumed}
	return r
}

// pauseUntilResumed pauses the rollout, lets shown say why, and holds it
// until an operator resumes it.
func (r *rollout) pauseUntilResumed(ctx workflow.Context, shown func()) error {
	r.setPaused(ctx, true)
	shown()
	return workflow.Await(ctx, func() bool { return !r.paused })
}

// explain is the query's answer: approvals and operator pauses come from
// the rollout's own state, the rest from what its stage last said.
func (r *rollout) explain() Explanation {
	e := r.why.now
	switch g := r.approvals; {
	case g.stage != "":
		e = Explanation{Waiting: WaitApproval, Stage: g.stage, Reason: "stage " + g.stage + " waits for approval (starter approve)", Since: r.progress.PhaseSince}
		if g.plan != nil && g.plan.StillNeeded != "" {
			e.Reason += "; still needed: " + g.plan.StillNeeded
		}
	case r.paused && e.Waiting != WaitPaused:
		e = Explanation{Waiting: WaitPaused, Stage: e.Stage, Reason: "paused by an operator (starter resume)"}
	case e.Waiting == "":
		e = Explanation{Waiting: WaitRunning, Reason: r.progress.Message, Since: r.progress.PhaseSince}
	}
	e.Gate = r.health.status
	e.Batch = r.why.batch
	e.Running = runningUpdates(r.moves.startedAt)
	return e
}

func (r *rollout) skip(stage string, u PlanUpdate) {
	r.result.Skipped++
	r.count("skipped", 1)
	r.result.Outcomes = append(r.result.Outcomes, UpdateOutcome{Stage: stage, Target: u.Target, State: "skipped"})
}

func (r *rollout) skipRest(after string) {
	seen := false
	for _, st := range r.in.Stages {
		if seen {
			for _, u := range st.Updates {
				r.skip(st.Name, u)
			}
		}
		seen = seen || st.Name == after
	}
}

func (r *rollout) count(k string, d int) { r.progress.Counts[k] += d }

func (r *rollout) setPaused(ctx workflow.Context, p bool) {
	r.paused = p
	if p {
		r.progress.State = workflows.StatePaused
		workflows.SetSearchState(ctx, workflows.StatePaused, workflows.Phase(r.progress.Phase), r.progress.Message)
	} else {
		r.progress.State = workflows.StateRunning
		workflows.SetSearchState(ctx, workflows.StateRunning, workflows.Phase(r.progress.Phase), r.progress.Message)
	}
}

// setPhase announces a phase; detail (the stage) is free text for the
// progress query and the Web UI's current details.
func (r *rollout) setPhase(ctx workflow.Context, phase workflows.Phase, detail string) {
	r.progress.Message = detail
	r.l.Step(ctx, phase, detail)
}

func (r *rollout) skipAll(stage string, us []PlanUpdate) {
	for _, u := range us {
		r.skip(stage, u)
	}
}

// cancelled ends a rollout stopped by err in stage (after its children,
// see runWindow): what never started is skipped, and the ending is
// published on a disconnected context (lifecycle.end).
func (r *rollout) cancelled(ctx workflow.Context, stage string, err error) error {
	r.skipRest(stage)
	how := "failed"
	if temporal.IsCanceledError(err) {
		how = "cancelled"
	}
	return r.end(ctx, err, fmt.Sprintf("%s in stage %s: %d done, %d skipped", how, stage, r.progress.Counts["done"], r.result.Skipped))
}

// end ends the rollout through the lifecycle (a rollout has no ledger
// attempt of its own: its updates do); outcome is what the progress query
// and the Web UI say.
func (r *rollout) end(ctx workflow.Context, err error, outcome string) error {
	r.notifier.flush(ctx)
	return r.l.End(ctx, err, workflows.Ending{Outcome: outcome, Message: outcome, FailedOutcome: outcome})
}
