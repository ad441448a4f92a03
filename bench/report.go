package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Report is everything one `make bench` measured.
type Report struct {
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished,omitzero"`
	Machine  Machine       `json:"machine"`
	Config   ConfigSummary `json:"config"`
	// PGMode says how PostgreSQL statements were counted.
	PGMode string `json:"pgMode"`
	Runs   []Run  `json:"runs"`
	// HistoryCheck are small runs with ten times slower devices.
	HistoryCheck []Run    `json:"historyCheck,omitempty"`
	Errors       []string `json:"errors,omitempty"`
	// KeptFrom are the start times of earlier invocations whose runs this
	// report kept (--append).
	KeptFrom []time.Time `json:"keptFrom,omitempty"`
	// Goals are the benchmark's goals (bench/README.md) against the figures above.
	Goals []Goal `json:"goals"`
}

// ConfigSummary is the part of Config a reader needs.
type ConfigSummary struct {
	Ns                  []int    `json:"ns"`
	Kinds               []string `json:"kinds"`
	Concurrency         int      `json:"concurrency"`
	BaselineConcurrency int      `json:"baselineConcurrency"`
	Workers             int      `json:"workers"`
	SpeedUp             float64  `json:"speedUp"`
	RealTimeN           int      `json:"realTimeN"`
	SPImageBytes        int64    `json:"spImageBytes"`
	SPMode              string   `json:"spMode"`
	WorkerLogLevel      string   `json:"workerLogLevel"`
	Temporal            string   `json:"temporal"`
}

func newReport(cfg Config, pgMode string) *Report {
	kinds := make([]string, len(cfg.Kinds))
	for i, k := range cfg.Kinds {
		kinds[i] = string(k)
	}
	return &Report{
		Started: time.Now().UTC(), Machine: describeMachine(), PGMode: pgMode,
		Config: ConfigSummary{Ns: cfg.Ns, Kinds: kinds, Concurrency: cfg.Concurrency, BaselineConcurrency: cfg.BaselineConcurrency,
			Workers: cfg.Workers, SpeedUp: cfg.SpeedUp, RealTimeN: cfg.RealTimeN, SPImageBytes: cfg.SPImageSize, SPMode: cfg.SPMode,
			WorkerLogLevel: cfg.WorkerLogLevel,
			Temporal:       "Temporal CLI dev server (in-memory SQLite), one fresh server per run"},
	}
}

// write saves results.json, results.md, plot.svg and plot.png in dir.
func (r *Report) write(dir string) error {
	r.Goals = evaluateGoals(r.Runs, r.HistoryCheck)
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(r.Markdown()), 0o644); err != nil {
		return err
	}
	if len(r.Runs) == 0 {
		return nil
	}
	return r.plot(filepath.Join(dir, "plot"))
}

func secs(v float64) string {
	switch {
	case v == 0:
		return "–"
	case v < 10:
		return fmt.Sprintf("%.2f s", v)
	default:
		return fmt.Sprintf("%.0f s", v)
	}
}

// Markdown renders the table, the conditions and where the goals stand.
func (r *Report) Markdown() string {
	var sb strings.Builder
	m := r.Machine
	fmt.Fprintf(&sb, "# fleetsaga benchmark\n\n")
	fmt.Fprintf(&sb, "Run %s on %s: %d × %s, %d MiB, Linux %s, %s. ", r.Started.Format("2006-01-02 15:04 UTC"), m.Hostname,
		m.CPUs, m.CPUModel, m.MemoryMiB, m.Kernel, m.GoVersion)
	fmt.Fprintf(&sb, "Load average before: %.2f.\n\n", m.LoadBefore)
	c := r.Config
	fmt.Fprintf(&sb, "Stack per run: %s; %d worker process(es); PostgreSQL ledger; fleetsim at speed-up %g "+
		"(device timings = real-world / %g); concurrency P = %d; baseline = plain Go loop at concurrency %d calling the fleet clients "+
		"directly (no Temporal, no ledger). SP image %d bytes; SP updates started as: %s. PostgreSQL statements counted with %s.\n\n",
		c.Temporal, c.Workers, c.SpeedUp, c.SpeedUp, c.Concurrency, c.BaselineConcurrency, c.SPImageBytes, c.SPMode, r.PGMode)

	if len(r.KeptFrom) > 0 {
		var at []string
		for _, t := range r.KeptFrom {
			at = append(at, t.Format("2006-01-02 15:04 UTC"))
		}
		fmt.Fprintf(&sb, "Rows kept from earlier invocations (--append) started at %s; the conditions above are the last "+
			"invocation's, each run's own N, speed-up and P are in its row.\n\n", strings.Join(at, ", "))
	}
	fmt.Fprintf(&sb, "| kind | N | speed-up | device time | ideal (ceil(N/P)×t) | wall | overhead wall/ideal | added per wave (wall−ideal)/waves | "+
		"loop wall (concurrency %d) | speed-up vs loop (loop wall / wall) | CPU per update: server + worker | "+
		"history events per target (per-target wf; all incl. parents) | largest run's history | workflow tasks / target | activity tasks / target | "+
		"worker peak RSS | ledger rows written | PG statements / target | other load on machine | verified |\n", c.BaselineConcurrency)
	fmt.Fprintf(&sb, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	runs := sortedRuns(r.Runs)
	for _, run := range runs {
		sb.WriteString(run.tableRow())
	}
	sb.WriteString("\nColumns: *speed-up* divides the real device timings (1 = real device times); *device time* is one device's busy time computed from the spec timings as fleetsim applies them; " +
		"*wall* runs from the first start to the last result (client side); *loop* is the plain Go loop at fixed concurrency on the same device work in the same invocation " +
		"(not run at speed-up 1, where it would take about 30× as long); *CPU per update* is utime+stime of the Temporal dev server and of the worker processes " +
		"during the run, over N; *history events per target* sums every execution's " +
		"history (all runs of continue-as-new chains, parents included) over N; *largest run's history* is the longest single history (each run of a chain, each child; Temporal's limit is 10,240); " +
		"*workflow/activity tasks* come from history " +
		"(WorkflowTaskStarted; activity attempts) and, in parentheses, from the workers' SDK metrics (every task executed, " +
		"including ones history does not keep); *peak RSS* " +
		"is the largest VmHWM of one worker; *ledger rows written* counts rows added to every table of the run's ledger database; *other load* is CPU used on the machine by processes outside the bench during the " +
		"fleetsaga phase (other work sharing the 2 cores).\n\n")
	sb.WriteString("## Goals (issue 17)\n\n")
	sb.WriteString(goalsMarkdown(evaluateGoals(r.Runs, r.HistoryCheck)))
	sb.WriteString("\n")

	sb.WriteString("## Per run details\n\n")
	for _, run := range runs {
		fmt.Fprintf(&sb, "- **%s N=%d speed-up %g**: %s. Device model: %s. Outcome: %d completed, %d failed. ", run.Kind, run.N, run.SpeedUp, run.Mode,
			run.DeviceTimeModel, run.Outcome.Completed, run.Outcome.Failed)
		fmt.Fprintf(&sb, "fleetsim saw %d device attempts, device busy median %.3f s (max %.3f s). ", run.Verify.Attempts,
			run.Verify.DeviceBusyMedianSec, run.Verify.DeviceBusyMaxSec)
		fmt.Fprintf(&sb, "CPU during the run: workers %.1f s, Temporal server %.1f s, fleetsim %.1f s, PostgreSQL %.1f s, bench %.1f s; "+
			"machine busy %.2f cores on average. Largest single history: %d events (per-target workflow), %d (parents). ",
			run.WorkerCPUSec, run.TemporalCPUSec, run.FleetsimCPUSec, run.PostgresCPUSec, run.BenchCPUSec, run.SystemCPUBusy,
			run.TargetWorkflowMax, run.ParentMaxEvents)
		if h, ok := run.History[targetTypeOf(run.Kind)]; ok && h.Executions > 0 {
			fmt.Fprintf(&sb, "One %s history on average: %s. ", h.WorkflowType, strings.Join(perExecution(h, 8), ", "))
		}
		if len(run.PGTop) > 0 {
			var tops []string
			for i, s := range run.PGTop {
				if i == 4 {
					break
				}
				tops = append(tops, fmt.Sprintf("%d× `%s`", s.Calls, s.Query))
			}
			fmt.Fprintf(&sb, "Top statements: %s. ", strings.Join(tops, "; "))
		}
		if len(run.LedgerRows) > 0 {
			fmt.Fprintf(&sb, "Ledger rows written: %s. ", ledgerRowsText(run.LedgerRows))
		}
		if run.Baseline != nil {
			fmt.Fprintf(&sb, "Baseline: %s, %d completed, %d failed, ideal %s.", run.Baseline.Outcome.Mode,
				run.Baseline.Outcome.Completed, run.Baseline.Outcome.Failed, secs(run.Baseline.IdealSec))
		}
		if len(run.Errors) > 0 {
			fmt.Fprintf(&sb, " Errors: %s.", strings.Join(run.Errors, "; "))
		}
		if run.Verify.Note != "" {
			fmt.Fprintf(&sb, " Truth: %s.", run.Verify.Note)
		}
		sb.WriteString("\n")
	}
	if len(r.HistoryCheck) > 0 {
		sb.WriteString("\n## History vs device time\n\n")
		sb.WriteString("| kind | N | speed-up | device time | history events per target (per-target wf) | largest | wall | overhead |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
		all := append(append([]Run(nil), runs...), r.HistoryCheck...)
		sort.SliceStable(all, func(i, j int) bool { return all[i].Kind < all[j].Kind })
		for _, run := range all {
			fmt.Fprintf(&sb, "| %s | %d | %g | %s | %.1f | %d | %s | %.2f |\n", run.Kind, run.N, run.SpeedUp, secs(run.DeviceTimeSec),
				run.TargetWorkflowEvents, run.TargetWorkflowMax, secs(run.WallSec), run.Overhead)
		}
	}
	if len(r.Errors) > 0 {
		sb.WriteString("\n## Errors\n\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&sb, "- %s\n", e)
		}
	}
	return sb.String()
}

// perExecution lists h's most frequent event types per execution.
func perExecution(h *TypeHistory, n int) []string {
	var out []string
	for _, e := range topEvents(h.ByEvent, n) {
		name, v, _ := strings.Cut(e, "=")
		var x float64
		fmt.Sscan(v, &x)
		out = append(out, fmt.Sprintf("%s %.1f", strings.TrimPrefix(name, "EVENT_TYPE_"), x/float64(h.Executions)))
	}
	return out
}

func targetTypeOf(kind string) string {
	switch kind {
	case "sp-firmware":
		return "SPFirmwareUpdate"
	case "agent-install":
		return "AgentInstallServer"
	}
	return ""
}

// ReadReport loads a results.json written by a previous run.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range r.Runs {
		r.Runs[i].backfill()
	}
	return &r, nil
}

// Render rewrites results.md and the plots next to a results.json (after
// a change to the report's layout, without measuring again).
func Render(path string) error {
	r, err := ReadReport(path)
	if err != nil {
		return err
	}
	return r.write(filepath.Dir(path))
}
