package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// run is a verified run of kind at n and speed-up su, P=100.
func run(kind string, n int, su float64) Run {
	return Run{Kind: kind, N: n, SpeedUp: su, Concurrency: 100, WallSec: 10, IdealSec: 5, Overhead: 2,
		Verify: verification{OK: true}, Outcome: outcome{Completed: n}}
}

func goalStatus(t *testing.T, gs []Goal, prefix string) Goal {
	t.Helper()
	for _, g := range gs {
		if strings.HasPrefix(g.Goal, prefix) {
			return g
		}
	}
	t.Fatalf("no goal %q in %v", prefix, gs)
	return Goal{}
}

func TestGoalsAreComputedFromTheFigures(t *testing.T) {
	sp := run("sp-firmware", 1000, 30)
	sp.TemporalCPUPerTgtMs, sp.WorkerCPUPerTgtMs = 70, 25 // 95 ms: on the limit
	sp.Baseline = &BaselineRun{WallSec: 42, Verify: verification{OK: true}}
	sp.SpeedupVsBaseline = 4.2
	agent := run("agent-install", 1000, 30)
	agent.TemporalCPUPerTgtMs, agent.WorkerCPUPerTgtMs = 100, 21 // 121 ms
	agent.Baseline = &BaselineRun{WallSec: 30, Verify: verification{OK: true}}
	agent.SpeedupVsBaseline = 3
	spReal := run("sp-firmware", 1000, 1)
	spReal.Overhead = 1.04
	agentReal := run("agent-install", 1000, 1)
	agentReal.Overhead = 1.01
	agentReal.Verify.OK = false // the figure is good, the run is not
	large := run("agent-install", 10000, 30)
	large.MaxRunEvents, large.WorkerPeakRSSMiB = 10241, 120

	gs := evaluateGoals([]Run{sp, agent, spReal, agentReal, large}, nil)
	require.Equal(t, goalMet, goalStatus(t, gs, "CPU per sp-firmware").Status)
	require.Contains(t, goalStatus(t, gs, "CPU per sp-firmware").Figure, "95 ms (server 70 + worker 25)")
	require.Equal(t, goalNotMet, goalStatus(t, gs, "CPU per agent-install").Status)
	require.Equal(t, goalMet, goalStatus(t, gs, "sp-firmware ≥ 4×").Status)
	require.Equal(t, goalNotMet, goalStatus(t, gs, "agent-install ≥ 4×").Status)
	require.Equal(t, goalMet, goalStatus(t, gs, "sp-firmware overhead").Status)
	g := goalStatus(t, gs, "agent-install overhead")
	require.Equal(t, goalNotMet, g.Status)
	require.Contains(t, g.Figure, "fleetsim's truth")
	g = goalStatus(t, gs, "10,000 agent installs")
	require.Equal(t, goalNotMet, g.Status, "one run's history is above 10,240 events")
	require.Contains(t, g.Figure, "10241 events")

	large.MaxRunEvents = 10240
	gs = evaluateGoals([]Run{large}, nil)
	require.Equal(t, goalMet, goalStatus(t, gs, "10,000 agent installs").Status)
	require.Equal(t, goalNotMeasured, goalStatus(t, gs, "CPU per sp-firmware").Status)
	large.Outcome.Completed = 9999
	gs = evaluateGoals([]Run{large}, nil)
	require.Equal(t, goalNotMet, goalStatus(t, gs, "10,000 agent installs").Status)
}

func TestEventsGoalComparesDeviceTimes(t *testing.T) {
	fast, slow := run("sp-firmware", 1000, 30), run("sp-firmware", 10, 3)
	fast.TargetWorkflowEvents, fast.TargetWorkflowMax, fast.DeviceTimeSec = 46, 46, 0.87
	slow.TargetWorkflowEvents, slow.TargetWorkflowMax, slow.DeviceTimeSec = 46, 46, 8.7
	require.Equal(t, goalMet, eventsGoal("sp-firmware", []Run{fast, slow}).Status)
	slow.TargetWorkflowEvents, slow.TargetWorkflowMax = 50, 50 // the delivery's progress signals: bounded
	require.Equal(t, goalMet, eventsGoal("sp-firmware", []Run{fast, slow}).Status)
	fast.TargetWorkflowEvents, fast.TargetWorkflowMax = 22, 22
	slow.TargetWorkflowEvents, slow.TargetWorkflowMax = 59, 59 // more than nine signals' worth
	require.Equal(t, goalNotMet, eventsGoal("sp-firmware", []Run{fast, slow}).Status)
	require.Equal(t, goalNotMeasured, eventsGoal("agent-install", []Run{fast, slow}).Status)
	fast.Kind, slow.Kind = "agent-install", "agent-install"
	fast.TargetWorkflowEvents, slow.TargetWorkflowEvents = 30, 34 // no step of it reports progress
	fast.TargetWorkflowMax, slow.TargetWorkflowMax = 30, 34
	require.Equal(t, goalNotMet, eventsGoal("agent-install", []Run{fast, slow}).Status)
}

func TestTableLabelsRowsBySpeedUpAndShowsCPUAndTheLoop(t *testing.T) {
	fast := run("sp-firmware", 1000, 30)
	fast.TemporalCPUPerTgtMs, fast.WorkerCPUPerTgtMs = 70.4, 23.2
	fast.Baseline = &BaselineRun{WallSec: 194, Overhead: 1.12, Verify: verification{OK: true}}
	fast.SpeedupVsBaseline = 2.8
	fast.LedgerRows, fast.LedgerRowsWritten = map[string]int64{"update_event": 5000, "update_attempt": 1000}, 6000
	rt := run("sp-firmware", 1000, 1)
	rt.BaselineSkipped = "not run at speed-up 1 (≈30× longer)"
	r := &Report{Runs: []Run{rt, fast}, Config: ConfigSummary{BaselineConcurrency: 5, SpeedUp: 30}}
	md := r.Markdown()

	rows := tableRows(md)
	require.Len(t, rows, 2)
	require.True(t, strings.HasPrefix(rows[0], "| sp-firmware | 1000 | 30 |"), rows[0])
	require.Contains(t, rows[0], "**94 ms** (70 + 23)")
	require.Contains(t, rows[0], "**2.8×**")
	require.Contains(t, rows[0], "| 6000 |")
	require.True(t, strings.HasPrefix(rows[1], "| sp-firmware | 1000 | 1 |"), rows[1])
	require.Contains(t, rows[1], "not run at speed-up 1")
	require.Contains(t, md, "update_event 5000, update_attempt 1000")
	require.Contains(t, md, "## Goals (issue 17)")
}

// tableRows returns the data rows of the results table.
func tableRows(md string) []string {
	var out []string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| sp-firmware |") || strings.HasPrefix(l, "| agent-install |") {
			if strings.Count(l, "|") > 15 { // not the history table
				out = append(out, l)
			}
		}
	}
	return out
}

func TestPutRunReplacesTheSameMeasurement(t *testing.T) {
	a, b := run("agent-install", 1000, 30), run("agent-install", 1000, 1)
	runs := putRun(putRun(nil, a), b)
	require.Len(t, runs, 2)
	a2 := a
	a2.WallSec = 99
	runs = putRun(runs, a2)
	require.Len(t, runs, 2)
	require.Equal(t, 99.0, runs[0].WallSec)
}

func TestAppendKeepsEarlierRunsAndBackfillsOldFiles(t *testing.T) {
	dir := t.TempDir()
	old := run("sp-firmware", 100, 30)
	old.TemporalCPUSec, old.TargetWorkflowMax, old.ParentMaxEvents = 5.3, 46, 454
	prev := &Report{Runs: []Run{old}, Config: ConfigSummary{SpeedUp: 30, Concurrency: 100, BaselineConcurrency: 5}}
	require.NoError(t, prev.write(dir))

	r := &Report{}
	require.NoError(t, r.keepPrevious(filepath.Join(dir, "results.json")))
	require.Len(t, r.Runs, 1)
	require.InDelta(t, 53, r.Runs[0].TemporalCPUPerTgtMs, 1e-9)
	require.Equal(t, int64(454), r.Runs[0].MaxRunEvents)
	require.Len(t, r.KeptFrom, 1)

	require.NoError(t, (&Report{}).keepPrevious(filepath.Join(dir, "none.json")))
}

func TestPlotSeparatesSpeedUpsAndWritesFiles(t *testing.T) {
	runs := []Run{run("agent-install", 100, 30), run("agent-install", 1000, 30), run("agent-install", 1000, 1), run("sp-firmware", 1000, 1)}
	s := plotSeries(runs)
	require.Len(t, s, 3)
	require.Equal(t, 30.0, s[0].speedUp)
	require.Len(t, s[0].wall, 2)
	require.Equal(t, 1.0, s[1].speedUp)

	dir := t.TempDir()
	r := &Report{Runs: runs, Config: ConfigSummary{SpeedUp: 30, Concurrency: 100, BaselineConcurrency: 5}}
	require.NoError(t, r.write(dir))
	for _, f := range []string{"results.json", "results.md", "plot.svg", "plot.png"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}
}

func TestRowsWritten(t *testing.T) {
	rows, total := rowsWritten(map[string]int64{"schema_migrations": 7, "update_attempt": 0},
		map[string]int64{"schema_migrations": 7, "update_attempt": 1000, "update_event": 5000})
	require.Equal(t, map[string]int64{"update_attempt": 1000, "update_event": 5000}, rows)
	require.Equal(t, int64(6000), total)
}
