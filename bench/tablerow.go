package bench

import (
	"fmt"
	"sort"
	"strings"
)

// sortedRuns orders the table: by kind, compressed runs before real-time
// ones, then by N.
func sortedRuns(runs []Run) []Run {
	out := append([]Run(nil), runs...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.SpeedUp != b.SpeedUp {
			return a.SpeedUp > b.SpeedUp
		}
		return a.N < b.N
	})
	return out
}

// tableRow is the run's row of the results table.
func (run Run) tableRow() string {
	bl, ratio := "–", "–"
	switch {
	case run.Baseline != nil:
		bl = fmt.Sprintf("%s (%.2f× its ideal)", secs(run.Baseline.WallSec), run.Baseline.Overhead)
		if run.SpeedupVsBaseline > 0 {
			ratio = fmt.Sprintf("**%.1f×**", run.SpeedupVsBaseline)
		}
	case run.BaselineSkipped != "":
		bl = run.BaselineSkipped
	}
	rows := "–" // a run from before the bench counted them
	if run.LedgerRows != nil {
		rows = fmt.Sprint(run.LedgerRowsWritten)
	}
	ok := "yes"
	if run.failed() != "" {
		ok = "**no**"
	}
	if run.Baseline != nil && !run.Baseline.Verify.OK {
		ok += " (loop **no**)"
	}
	return fmt.Sprintf("| %s | %d | %g | %s | %s | %s | **%.2f** | %s | %s | %s | **%.0f ms** (%.0f + %.0f) | %.1f; %.1f | %d | %.1f (workers: %.1f) | %.1f (workers: %.1f) | %.0f MiB | %s | %.1f | %.2f cores | %s |\n",
		run.Kind, run.N, run.SpeedUp, secs(run.DeviceTimeSec), secs(run.IdealSec), secs(run.WallSec), run.Overhead,
		secs(run.ExtraPerWaveSec), bl, ratio,
		run.CPUPerUpdateMs(), run.TemporalCPUPerTgtMs, run.WorkerCPUPerTgtMs,
		run.TargetWorkflowEvents, run.EventsPerTarget, run.MaxRunEvents, run.WorkflowTasksPerTgt, run.WorkerWFTPerTgt,
		run.ActivityTasksPerTgt, run.WorkerActPerTgt, run.WorkerPeakRSSMiB, rows, run.PGStatementsPerTg,
		run.OtherCPUCores, ok)
}

// ledgerRowsText lists rows written per table, largest first.
func ledgerRowsText(rows map[string]int64) string {
	var tables []string
	for t := range rows {
		tables = append(tables, t)
	}
	sort.Slice(tables, func(i, j int) bool {
		a, b := tables[i], tables[j]
		return rows[a] > rows[b] || (rows[a] == rows[b] && a < b)
	})
	parts := make([]string, len(tables))
	for i, t := range tables {
		parts[i] = fmt.Sprintf("%s %d", t, rows[t])
	}
	return strings.Join(parts, ", ")
}
