package rollout

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/health"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// healthCheckTimeout bounds one CheckHealth attempt: its own bound (the
// wait for data scraped after the batch, the queries) and a margin; a
// worker lost mid-check is retried after this long.
const healthCheckTimeout = MaxHealthCheck + 15*time.Second

// healthCheckAttempts: a lost worker is retried; a monitor that does not
// answer is an inconclusive verdict, not an activity error, so retrying
// more only delays the gate's own counting.
const healthCheckAttempts = 3

// healthGate judges a stage's batches: rounds of its checks until the
// bake passed, or enough failed or inconclusive rounds.
type healthGate struct {
	status *GateStatus // the last round (explain)

	notifier *notifier
	why      *explainer
	events   *eventLog
	progress *workflows.Progress
	// pause pauses the rollout, then says why (shown), and holds it
	// until an operator resumes it.
	pause func(ctx workflow.Context, shown func()) error
}

// after runs the stage's gate after batch: a round of every check
// now, then every interval until the bake has passed and the last round
// passed. It returns why the rollout must stop (nil: the batch is
// healthy); a cancel is the error.
func (h *healthGate) after(ctx workflow.Context, st Stage, batch int) (*stageStop, error) {
	g := *st.Health
	start := workflow.Now(ctx) // the batch's end: every round judges data scraped after it
	h.notifier.notify(ctx, eventGateReached, fmt.Sprintf("%s/%d", st.Name, batch), map[string]any{"stage": st.Name, "batch": batch, "checks": len(g.Checks), "bake": g.Bake.String()})
	fails, inconclusive := 0, 0
	for round := 1; ; round++ {
		h.why.waiting(ctx, WaitGate, st.Name, fmt.Sprintf("health gate after batch %d, round %d (bake %s)", batch, round, g.Bake))
		results := h.checkRound(ctx, g.Checks, start)
		verdict, reason := judgeRound(results)
		passed := !workflow.Now(ctx).Before(start.Add(g.Bake)) && (verdict == health.Pass || g.Shadow)
		// The last round and the gate's passing are one ledger row. A round
		// the run before an operator's reset recorded keeps its verdict:
		// the reset run never judges it again (a failed gate stays failed).
		rec := h.events.record(ctx, st.Name, gateRow(passed), string(verdict), gateReason(passed, batch, round, reason), results, g.Shadow)
		if rec.Kind == eventGateRound || rec.Kind == eventGatePassed {
			passed, results = rec.Kind == eventGatePassed, recordedResults(rec, results)
			verdict, reason = judgeRound(results)
		}
		switch verdict {
		case health.Fail:
			fails++
		case health.Inconclusive:
			inconclusive++
		}
		gs := GateStatus{Stage: st.Name, Batch: batch, Round: round, Verdict: verdict, Reason: reason,
			Failures: fails, Inconclusive: inconclusive, Shadow: g.Shadow, Results: results, At: workflow.Now(ctx)}
		h.status = &gs
		workflows.Count(ctx, workflows.MetricGateRounds, map[string]string{"verdict": string(verdict), "shadow": fmt.Sprint(g.Shadow)})
		h.show(ctx, gs)
		if passed {
			return nil, nil
		}
		if !g.Shadow && fails >= g.failuresToAbort() {
			return &stageStop{kind: failure.HealthGateFailed, reason: fmt.Sprintf("health gate failed after batch %d (%d failed rounds): %s", batch, fails, reason)}, nil
		}
		if !g.Shadow && inconclusive >= g.inconclusiveToPause() {
			if err := h.pauseFor(ctx, st, fmt.Sprintf("health gate inconclusive %d times after batch %d: %s; `starter resume` checks again", inconclusive, batch, reason)); err != nil {
				return nil, err
			}
			inconclusive = 0
			continue
		}
		if err := workflow.Sleep(ctx, g.interval()); err != nil {
			return nil, err
		}
	}
}

// recordedResults are a recorded round's results (ours when the row has
// none it can read).
func recordedResults(rec ledger.RolloutEvent, ours []HealthResult) []HealthResult {
	var got []HealthResult
	// A slice's JSON decodes by its values alone (workflowcheck flags the
	// reflection encoding/json uses).
	//workflowcheck:ignore
	if err := json.Unmarshal(rec.Detail, &got); err != nil || len(got) == 0 {
		return ours
	}
	return got
}

// checkRound runs every check once, at the same time, on data scraped
// after batchEnd. The input's new field needs no version marker: replay
// does not compare activity inputs, and the commands are the same.
func (h *healthGate) checkRound(ctx workflow.Context, checks []HealthCheck, batchEnd time.Time) []HealthResult {
	var a *HealthActivities
	futures := make([]workflow.Future, len(checks))
	for i, c := range checks {
		c.ScrapedAfter = batchEnd
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: healthCheckTimeout,
			RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: healthCheckAttempts},
			Summary:             "health check " + c.Name,
		})
		futures[i] = workflow.ExecuteActivity(actx, a.CheckHealth, c)
	}
	out := make([]HealthResult, len(checks))
	for i, f := range futures {
		if err := f.Get(ctx, &out[i]); err != nil {
			// A check that cannot run (no Prometheus configured, a query
			// Prometheus refuses) proves nothing: inconclusive, so the
			// gate pauses and an operator can fix the worker or the plan.
			out[i] = HealthResult{Name: checks[i].Name, Result: health.Result{Verdict: health.Inconclusive, Reason: "cannot run: " + failure.Line(err)}}
		}
	}
	return out
}

// judgeRound: a round fails if any check failed, else is inconclusive if
// any was, else passes; the reason names the checks that decided it.
func judgeRound(results []HealthResult) (health.Verdict, string) {
	for _, v := range []health.Verdict{health.Fail, health.Inconclusive} {
		var why []string
		for _, r := range results {
			if r.Verdict == v {
				why = append(why, r.Name+": "+r.Reason)
			}
		}
		if len(why) > 0 {
			return v, strings.Join(why, "; ")
		}
	}
	return health.Pass, fmt.Sprintf("%d checks passed", len(results))
}

// pauseFor pauses the rollout on inconclusive results until an
// operator resumes it.
func (h *healthGate) pauseFor(ctx workflow.Context, st Stage, why string) error {
	h.events.record(ctx, st.Name, "paused", string(health.Inconclusive), why, nil, false)
	return h.pause(ctx, func() {
		workflows.Count(ctx, workflows.MetricRolloutWaits, map[string]string{"reason": string(WaitPaused)})
		h.why.waiting(ctx, WaitPaused, st.Name, why)
		h.progress.Message = "paused: " + why
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s** — stage %s\n\n%s\n", workflows.StatePaused, st.Name, why))
	})
}

// show publishes a round: the progress message (starter status) and
// the Web UI's current details.
func (h *healthGate) show(ctx workflow.Context, gs GateStatus) {
	mode := ""
	if gs.Shadow {
		mode = " (shadow: recorded, not blocking)"
	}
	h.progress.Message = fmt.Sprintf("stage %s: health gate after batch %d, round %d: %s — %s%s", gs.Stage, gs.Batch, gs.Round, gs.Verdict, gs.Reason, mode)
	var b strings.Builder
	b.WriteString(fmt.Sprintf("**%s** — stage %s: health gate after batch %d, round %d: **%s**%s\n\n", h.progress.State, gs.Stage, gs.Batch, gs.Round, gs.Verdict, mode))
	for _, res := range gs.Results {
		b.WriteString(fmt.Sprintf("- %s: **%s** %s\n", res.Name, res.Verdict, res.Reason))
	}
	workflow.SetCurrentDetails(ctx, b.String())
}
