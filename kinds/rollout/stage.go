package rollout

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// runStage runs a stage: in batches (the ramp's size, else the
// concurrency, for a stage with a health gate or a ramp; else the whole
// stage at once), each start waiting for the calendar, and after each
// batch the health gate. It returns how many failed, and why it stopped
// the rollout (nil: it did not); a stage that ran to its end is told to
// the webhooks.
func (r *rollout) runStage(ctx workflow.Context, st Stage) (int, *stageStop, error) {
	r.setPhase(ctx, workflows.PhaseRunningStage, "stage "+st.Name)
	size := st.Concurrency
	if st.Ramp != nil {
		size = st.Ramp.Start
	}
	batched := st.Health != nil || st.Ramp != nil
	pending := st.Updates
	var tally stageTally
	var stop *stageStop
	failedInStage := 0
	over := func() bool { return st.budgetApplies() && failedInStage > st.FailureBudget }
	for batch := 1; len(pending) > 0 && stop == nil; batch++ {
		take := len(pending)
		if batched {
			take = min(size, len(pending))
		}
		conc := min(size, st.Concurrency)
		r.why.batch = conc
		r.why.waiting(ctx, WaitRunning, st.Name, fmt.Sprintf("batch %d: %d updates, %d at once", batch, take, conc))
		wctx, cancelWindow := workflow.WithCancel(ctx)
		r.calendar.cancelWindow = cancelWindow
		failed, unstarted, err := r.runWindow(wctx, st, pending[:take], windowHooks{
			concurrency: func() int { return conc },
			stop:        func(int) bool { return stop != nil || over() },
			beforeStart: func(wctx workflow.Context) (bool, error) {
				waited, err := r.calendar.await(ctx, st)
				if err != nil && ctx.Err() == nil && stop == nil {
					stop = &stageStop{kind: failure.WindowClosed, reason: "the calendar could not be read: " + failure.Line(err)}
				}
				return waited, err
			},
			ended: func(out UpdateOutcome) {
				tally.add(out)
				if out.State == workflows.StateFailed {
					failedInStage++
				}
				if why := tally.breached(st.Thresholds); why != "" && stop == nil {
					stop = &stageStop{kind: failure.FailureThreshold, reason: why}
				}
			},
		})
		r.calendar.cancelWindow = nil
		rest := append(append([]PlanUpdate(nil), unstarted...), pending[take:]...)
		pending = rest
		if cut := r.calendar.windowCut; err != nil && ctx.Err() == nil && !cut.IsZero() {
			err, stop = nil, &stageStop{kind: failure.WindowClosed,
				reason: "the maintenance window closed at " + cut.UTC().Format(time.RFC3339) + " (endBehavior cancel): running updates were cancelled"}
		}
		if err != nil {
			r.skipAll(st.Name, pending)
			return failedInStage, nil, err
		}
		if stop != nil || over() {
			break
		}
		if st.Health != nil {
			gs, err := r.health.after(ctx, st, batch)
			if err != nil {
				r.skipAll(st.Name, pending)
				return failedInStage, nil, err
			}
			stop = gs
			if stop == nil && failed == 0 && st.Ramp != nil {
				size = st.Ramp.next(size, st.Concurrency)
			}
		} else if failed == 0 && st.Ramp != nil {
			size = st.Ramp.next(size, st.Concurrency)
		}
		if stop == nil && len(pending) > 0 {
			r.setPhase(ctx, workflows.PhaseRunningStage, fmt.Sprintf("stage %s: batch %d healthy, next batch of %d", st.Name, batch, min(size, len(pending))))
		}
	}
	r.skipAll(st.Name, pending)
	if stop != nil {
		r.events.record(ctx, st.Name, "aborted", "", stop.reason, nil, false)
		return failedInStage, stop, nil
	}
	r.why.now = Explanation{} // the stage's waits are over
	r.stageEnded(ctx, st, failedInStage)
	return failedInStage, nil, nil
}

// budgetApplies: a stage with thresholds keeps its absolute budget only
// when the plan gives one.
func (st Stage) budgetApplies() bool { return st.FailureBudget > 0 || len(st.Thresholds) == 0 }

// abort ends the rollout stopped by a gated stage: the later stages are
// skipped and the reason is the rollout's ending.
func (r *rollout) abort(ctx workflow.Context, st Stage, s *stageStop) error {
	r.skipRest(st.Name)
	msg := fmt.Sprintf("stage %s: %s", st.Name, s.reason)
	r.why.stopped(ctx, st.Name, s.reason)
	workflows.Count(ctx, workflows.MetricRolloutStops, map[string]string{"reason": s.kind})
	r.notifier.notify(ctx, eventAborted, st.Name, map[string]any{"stage": st.Name, "reason": s.reason, "type": s.kind})
	return r.end(ctx, temporal.NewNonRetryableApplicationError(msg, s.kind, nil), "aborted: "+msg)
}

// stageTally counts a stage's ended updates by class, for its thresholds.
type stageTally struct {
	ended   int
	failed  int
	byClass map[FailureClass]int
}

func (t *stageTally) add(out UpdateOutcome) {
	switch out.State {
	case workflows.StateCompleted:
		t.ended++
	case workflows.StateFailed:
		t.ended++
		t.failed++
		if t.byClass == nil {
			t.byClass = map[FailureClass]int{}
		}
		t.byClass[out.Class]++
	}
}

// breached is the first threshold the tally passes, as a sentence ("" if
// none).
func (t *stageTally) breached(thresholds []Threshold) string {
	for _, th := range thresholds {
		if t.ended < th.Minimum {
			continue
		}
		n := t.byClass[th.Class]
		if th.Class == ClassAny {
			n = t.failed
		}
		if pct := 100 * float64(n) / float64(t.ended); pct > th.Percent {
			return fmt.Sprintf("%d of %d ended updates failed with %s (%.0f%%), over the threshold of %g%%",
				n, t.ended, th.Class, pct, th.Percent)
		}
	}
	return ""
}

// stageEnded tells that a stage ended with every batch healthy.
func (r *rollout) stageEnded(ctx workflow.Context, st Stage, failed int) {
	counts := map[string]int{}
	for _, o := range r.result.Outcomes {
		if o.Stage == st.Name {
			counts[string(o.State)]++
		}
	}
	r.notifier.notify(ctx, eventStageEnded, st.Name, map[string]any{"stage": st.Name, "failed": failed, "outcomes": counts})
}
