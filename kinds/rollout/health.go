package rollout

import (
	"encoding/json"
	"fmt"
	"regexp"
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

// GateStatus is a gate's last round, for starter status and explain.
type GateStatus struct {
	Stage        string         `json:"stage"`
	Batch        int            `json:"batch"`
	Round        int            `json:"round"`
	Verdict      health.Verdict `json:"verdict"`
	Reason       string         `json:"reason"`
	Failures     int            `json:"failures"`
	Inconclusive int            `json:"inconclusive"`
	Shadow       bool           `json:"shadow,omitempty"`
	Results      []HealthResult `json:"results"`
	At           time.Time      `json:"at"`
}

// healthGate runs the stage's gate after batch: a round of every check
// now, then every interval until the bake has passed and the last round
// passed. It returns why the rollout must stop (nil: the batch is
// healthy); a cancel is the error.
func (r *rollout) healthGate(ctx workflow.Context, st Stage, batch int) (*stageStop, error) {
	g := *st.Health
	start := workflow.Now(ctx) // the batch's end: every round judges data scraped after it
	r.notify(ctx, eventGateReached, fmt.Sprintf("%s/%d", st.Name, batch), map[string]any{"stage": st.Name, "batch": batch, "checks": len(g.Checks), "bake": g.Bake.String()})
	fails, inconclusive := 0, 0
	for round := 1; ; round++ {
		r.explainWaiting(ctx, WaitGate, st.Name, fmt.Sprintf("health gate after batch %d, round %d (bake %s)", batch, round, g.Bake))
		results := r.checkRound(ctx, g.Checks, start)
		verdict, reason := judgeRound(results)
		passed := !workflow.Now(ctx).Before(start.Add(g.Bake)) && (verdict == health.Pass || g.Shadow)
		// The last round and the gate's passing are one ledger row. A round
		// the run before an operator's reset recorded keeps its verdict:
		// the reset run never judges it again (a failed gate stays failed).
		rec := r.recordEvent(ctx, st.Name, gateRow(passed), string(verdict), gateReason(passed, batch, round, reason), results, g.Shadow)
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
		r.gateStatus = &gs
		workflows.Count(ctx, workflows.MetricGateRounds, map[string]string{"verdict": string(verdict), "shadow": fmt.Sprint(g.Shadow)})
		r.showGate(ctx, gs)
		if passed {
			return nil, nil
		}
		if !g.Shadow && fails >= g.failuresToAbort() {
			return &stageStop{kind: failure.HealthGateFailed, reason: fmt.Sprintf("health gate failed after batch %d (%d failed rounds): %s", batch, fails, reason)}, nil
		}
		if !g.Shadow && inconclusive >= g.inconclusiveToPause() {
			if err := r.pauseForGate(ctx, st, fmt.Sprintf("health gate inconclusive %d times after batch %d: %s; `starter resume` checks again", inconclusive, batch, reason)); err != nil {
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

// The kinds of a gate's ledger rows: a round, and the round that passed
// the gate.
const (
	eventGateRound  = "gate-round"
	eventGatePassed = "gate-passed"
)

func gateRow(passed bool) string {
	if passed {
		return eventGatePassed
	}
	return eventGateRound
}

func gateReason(passed bool, batch, round int, why string) string {
	if passed {
		return fmt.Sprintf("batch %d healthy after %d rounds: %s", batch, round, why)
	}
	return fmt.Sprintf("batch %d round %d: %s", batch, round, why)
}

// gateRoundRow reads a gate row's batch and round from its reason.
var gateRoundRow = regexp.MustCompile(`^batch (\d+) (?:round (\d+)|healthy after (\d+) rounds)`)

// gateRoundOf names the round a gate row judged ("2/3": batch 2, round
// 3), "" for any other row.
func gateRoundOf(e ledger.RolloutEvent) string {
	if e.Kind != eventGateRound && e.Kind != eventGatePassed {
		return ""
	}
	m := gateRoundRow.FindStringSubmatch(e.Reason)
	if m == nil {
		return ""
	}
	return m[1] + "/" + m[2] + m[3]
}

// sameDecision says whether the ledger's row at a point of the rollout
// decided what e decides there: the same round of a gate (its verdict
// may differ: the recorded one stands), or the same event.
func sameDecision(got, e ledger.RolloutEvent) bool {
	if got.Stage != e.Stage {
		return false
	}
	if round := gateRoundOf(e); round != "" {
		return gateRoundOf(got) == round
	}
	return got.Kind == e.Kind && got.Reason == e.Reason
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
func (r *rollout) checkRound(ctx workflow.Context, checks []HealthCheck, batchEnd time.Time) []HealthResult {
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

// pauseForGate pauses the rollout on inconclusive results until an
// operator resumes it.
func (r *rollout) pauseForGate(ctx workflow.Context, st Stage, why string) error {
	r.recordEvent(ctx, st.Name, "paused", string(health.Inconclusive), why, nil, false)
	r.setPaused(ctx, true)
	workflows.Count(ctx, workflows.MetricRolloutWaits, map[string]string{"reason": string(WaitPaused)})
	r.explainWaiting(ctx, WaitPaused, st.Name, why)
	r.progress.Message = "paused: " + why
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s** — stage %s\n\n%s\n", workflows.StatePaused, st.Name, why))
	return workflow.Await(ctx, func() bool { return !r.paused })
}

// showGate publishes a round: the progress message (starter status) and
// the Web UI's current details.
func (r *rollout) showGate(ctx workflow.Context, gs GateStatus) {
	mode := ""
	if gs.Shadow {
		mode = " (shadow: recorded, not blocking)"
	}
	r.progress.Message = fmt.Sprintf("stage %s: health gate after batch %d, round %d: %s — %s%s", gs.Stage, gs.Batch, gs.Round, gs.Verdict, gs.Reason, mode)
	var b strings.Builder
	b.WriteString(fmt.Sprintf("**%s** — stage %s: health gate after batch %d, round %d: **%s**%s\n\n", r.progress.State, gs.Stage, gs.Batch, gs.Round, gs.Verdict, mode))
	for _, res := range gs.Results {
		b.WriteString(fmt.Sprintf("- %s: **%s** %s\n", res.Name, res.Verdict, res.Reason))
	}
	workflow.SetCurrentDetails(ctx, b.String())
}
