package bench

import (
	"fmt"
	"strings"

	"github.com/fleetsaga/fleetsaga/activities"
)

// Goal statuses.
const (
	goalMet         = "met"
	goalNotMet      = "not met"
	goalNotMeasured = "not measured"
)

// Goal is one of the benchmark's goals (bench/README.md) and where this report's figures put it.
type Goal struct {
	Goal   string `json:"goal"`
	Figure string `json:"figure"`
	Status string `json:"status"`
}

// Conditions of the goals: the compressed runs at speed-up 30, N=1,000,
// P=100; the real-time runs at speed-up 1, N=1,000; the fan-out at 10,000.
const (
	goalSpeedUp    = 30
	goalN          = 1000
	goalP          = 100
	goalLargeN     = 10000
	historyLimit   = 10240
	maxEventsPerUp = 60
)

// progressEvents is what device time may add to an update's history: the
// step-progress signals of its long steps (an SP's delivery), at most one
// per tenth, each a signal and a workflow task. More, or growth
// without bound, fails the goal; a kind whose steps do not report may not
// grow at all.
func progressEvents(kind string) int {
	longSteps := map[string]int{"sp-firmware": 1}[kind]
	return longSteps * 4 * (activities.ProgressSteps - 1)
}

// cpuGoalMs is the CPU per update (server + worker) each kind aims at: half
// of what the build before the bookkeeping changes measured (~190 ms SP, ~240 ms agent).
var cpuGoalMs = map[string]float64{"sp-firmware": 95, "agent-install": 120}

var goalKinds = []string{"sp-firmware", "agent-install"}

// findRun returns the run of kind at n, speed-up su and concurrency p.
func findRun(runs []Run, kind string, n int, su float64, p int) *Run {
	for i := range runs {
		r := &runs[i]
		if r.Kind == kind && r.N == n && r.SpeedUp == su && r.Concurrency == p {
			return r
		}
	}
	return nil
}

// failed says why a run's figures cannot meet a goal, or "".
func (r *Run) failed() string {
	switch {
	case len(r.Errors) > 0:
		return "run failed: " + strings.Join(r.Errors, "; ")
	case !r.Verify.OK:
		return "fleetsim's truth does not show every update"
	}
	return ""
}

// judge is a goal's status from a run and a comparison on its figures.
func judge(r *Run, ok bool) string {
	if r.failed() != "" || !ok {
		return goalNotMet
	}
	return goalMet
}

// withFailure adds why the run failed to a figure.
func withFailure(r *Run, figure string) string {
	if f := r.failed(); f != "" {
		return figure + " (" + f + ")"
	}
	return figure
}

// CPUPerUpdateMs is the Temporal server's and the workers' CPU per target.
func (r *Run) CPUPerUpdateMs() float64 { return r.TemporalCPUPerTgtMs + r.WorkerCPUPerTgtMs }

// evaluateGoals computes, from the figures of runs (and the slower-device
// history checks) only, where each goal stands.
func evaluateGoals(runs, historyCheck []Run) []Goal {
	var gs []Goal
	add := func(goal string, r *Run, figure func(*Run) string, ok func(*Run) bool) {
		if r == nil {
			gs = append(gs, Goal{Goal: goal, Figure: "–", Status: goalNotMeasured})
			return
		}
		gs = append(gs, Goal{Goal: goal, Figure: withFailure(r, figure(r)), Status: judge(r, ok(r))})
	}
	for _, k := range goalKinds {
		lim := cpuGoalMs[k]
		add(fmt.Sprintf("CPU per %s update (Temporal server + worker) ≤ %.0f ms at speed-up %d, N=1,000, P=%d", k, lim, goalSpeedUp, goalP),
			findRun(runs, k, goalN, goalSpeedUp, goalP),
			func(r *Run) string {
				return fmt.Sprintf("%.0f ms (server %.0f + worker %.0f)", r.CPUPerUpdateMs(), r.TemporalCPUPerTgtMs, r.WorkerCPUPerTgtMs)
			},
			func(r *Run) bool { return r.CPUPerUpdateMs() <= lim })
	}
	for _, k := range goalKinds {
		r := findRun(runs, k, goalN, goalSpeedUp, goalP)
		if r != nil && r.Baseline == nil {
			r = nil // no loop to compare with
		}
		add(fmt.Sprintf("%s ≥ 4× faster than the concurrency-5 loop at speed-up %d, N=1,000, P=%d", k, goalSpeedUp, goalP), r,
			func(r *Run) string {
				return fmt.Sprintf("%.1f× (loop %s, fleetsaga %s)", r.SpeedupVsBaseline, secs(r.Baseline.WallSec), secs(r.WallSec))
			},
			func(r *Run) bool { return r.SpeedupVsBaseline >= 4 && r.Baseline.Verify.OK })
	}
	for _, k := range goalKinds {
		add(fmt.Sprintf("%s overhead wall/ideal ≤ 1.05 at real device times (speed-up 1), N=1,000, P=%d", k, goalP),
			findRun(runs, k, goalN, 1, goalP),
			func(r *Run) string {
				return fmt.Sprintf("%.3f (wall %s, ideal %s)", r.Overhead, secs(r.WallSec), secs(r.IdealSec))
			},
			func(r *Run) bool { return r.Overhead <= 1.05 })
	}
	add(fmt.Sprintf("10,000 agent installs (P=%d) complete, no run's history above 10,240 events, worker peak RSS < 300 MiB", goalP),
		largestAgentRun(runs),
		func(r *Run) string {
			return fmt.Sprintf("%d of %d completed, largest run history %d events, worker peak RSS %.0f MiB, %d ledger rows written, overhead %.2f at speed-up %g",
				r.Outcome.Completed, r.N, r.MaxRunEvents, r.WorkerPeakRSSMiB, r.LedgerRowsWritten, r.Overhead, r.SpeedUp)
		},
		func(r *Run) bool {
			return r.Outcome.Completed == r.N && r.MaxRunEvents > 0 && r.MaxRunEvents <= historyLimit && r.WorkerPeakRSSMiB < 300
		})
	for _, k := range goalKinds {
		gs = append(gs, eventsGoal(k, append(append([]Run(nil), runs...), historyCheck...)))
	}
	return gs
}

// largestAgentRun is the agent-install run at N=10,000, P=100 (any
// speed-up), the fastest if there are several.
func largestAgentRun(runs []Run) *Run {
	var best *Run
	for i := range runs {
		r := &runs[i]
		if r.Kind == "agent-install" && r.N == goalLargeN && r.Concurrency == goalP && (best == nil || r.SpeedUp > best.SpeedUp) {
			best = r
		}
	}
	return best
}

// eventsGoal: history events per update ≤ 60, and the same whatever the
// device time but for the step-progress signals (progressEvents), over
// every run of kind.
func eventsGoal(kind string, runs []Run) Goal {
	g := Goal{Goal: fmt.Sprintf("%s: ≤ %d history events per update; device time adds at most its long steps' progress signals (≤ %d events)",
		kind, maxEventsPerUp, progressEvents(kind)), Status: goalNotMeasured, Figure: "–"}
	var lo, hi float64
	var largest int64
	var tMin, tMax float64
	seen := 0
	for _, r := range runs {
		if r.Kind != kind || r.TargetWorkflowMax == 0 {
			continue
		}
		if seen == 0 || r.TargetWorkflowEvents < lo {
			lo = r.TargetWorkflowEvents
		}
		if seen == 0 || r.DeviceTimeSec < tMin {
			tMin = r.DeviceTimeSec
		}
		hi, tMax = max(hi, r.TargetWorkflowEvents), max(tMax, r.DeviceTimeSec)
		largest = max(largest, r.TargetWorkflowMax)
		seen++
	}
	if seen == 0 {
		return g
	}
	g.Figure = fmt.Sprintf("mean %.1f–%.1f per update over device times %s–%s (%d runs), largest %d", lo, hi, secs(tMin), secs(tMax), seen, largest)
	g.Status = goalNotMet
	if largest <= maxEventsPerUp && hi-lo <= 0.5+float64(progressEvents(kind)) {
		g.Status = goalMet
	}
	return g
}

// goalsMarkdown lists the goals under the table.
func goalsMarkdown(gs []Goal) string {
	var sb strings.Builder
	for _, g := range gs {
		st := g.Status
		if st == goalNotMet {
			st = "**not met**"
		}
		fmt.Fprintf(&sb, "- %s: %s — %s.\n", g.Goal, g.Figure, st)
	}
	return sb.String()
}
