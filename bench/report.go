package bench

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
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
}

// ConfigSummary is the part of Config a reader needs.
type ConfigSummary struct {
	Ns                  []int    `json:"ns"`
	Kinds               []string `json:"kinds"`
	Concurrency         int      `json:"concurrency"`
	BaselineConcurrency int      `json:"baselineConcurrency"`
	Workers             int      `json:"workers"`
	SpeedUp             float64  `json:"speedUp"`
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
			Workers: cfg.Workers, SpeedUp: cfg.SpeedUp, SPImageBytes: cfg.SPImageSize, SPMode: cfg.SPMode,
			WorkerLogLevel: cfg.WorkerLogLevel,
			Temporal:       "Temporal CLI dev server (in-memory SQLite), one fresh server per run"},
	}
}

// write saves results.json, results.md, plot.svg and plot.png in dir.
func (r *Report) write(dir string) error {
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

	fmt.Fprintf(&sb, "| kind | N | device time | ideal (ceil(N/P)×t) | wall | overhead wall/ideal | added per wave (wall−ideal)/waves | baseline wall (P=%d) | baseline / fleetsaga | "+
		"history events per target (per-target wf; all incl. parents) | workflow tasks / target | activity tasks / target | "+
		"worker CPU (total; per target) | worker peak RSS | PG statements / target | other load on machine | verified |\n",
		c.BaselineConcurrency)
	fmt.Fprintf(&sb, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	runs := append([]Run(nil), r.Runs...)
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Kind < runs[j].Kind })
	for _, run := range runs {
		bl, ratio := "–", "–"
		if run.Baseline != nil {
			bl = fmt.Sprintf("%s (%.2f× its ideal)", secs(run.Baseline.WallSec), run.Baseline.Overhead)
			if run.SpeedupVsBaseline > 0 {
				ratio = fmt.Sprintf("%.1f×", run.SpeedupVsBaseline)
			}
		}
		ok := "yes"
		if !run.Verify.OK || len(run.Errors) > 0 {
			ok = "**no**"
		}
		if run.Baseline != nil && !run.Baseline.Verify.OK {
			ok += " (baseline **no**)"
		}
		fmt.Fprintf(&sb, "| %s | %d | %s | %s | %s | **%.2f** | %s | %s | %s | %.1f; %.1f | %.1f (workers: %.1f) | %.1f (workers: %.1f) | %.1f s; %.1f ms | %.0f MiB | %.1f | %.2f cores | %s |\n",
			run.Kind, run.N, secs(run.DeviceTimeSec), secs(run.IdealSec), secs(run.WallSec), run.Overhead,
			secs(run.ExtraPerWaveSec), bl, ratio,
			run.TargetWorkflowEvents, run.EventsPerTarget, run.WorkflowTasksPerTgt, run.WorkerWFTPerTgt,
			run.ActivityTasksPerTgt, run.WorkerActPerTgt, run.WorkerCPUSec, run.WorkerCPUPerTgtMs,
			run.WorkerPeakRSSMiB, run.PGStatementsPerTg, run.OtherCPUCores, ok)
	}
	sb.WriteString("\nColumns: *device time* is one device's busy time computed from the spec timings as fleetsim applies them; " +
		"*wall* runs from the first start to the last result (client side); *history events per target* sums every execution's " +
		"history (all runs of continue-as-new chains, parents included) over N; *workflow/activity tasks* come from history " +
		"(WorkflowTaskStarted; activity attempts) and, in parentheses, from the workers' SDK metrics (every task executed, " +
		"including ones history does not keep); *worker CPU* is utime+stime of the worker processes during the run; *peak RSS* " +
		"is the largest VmHWM of one worker; *other load* is CPU used on the machine by processes outside the bench during the " +
		"fleetsaga phase (other work sharing the 2 cores).\n\n")

	sb.WriteString("## Per run details\n\n")
	for _, run := range runs {
		fmt.Fprintf(&sb, "- **%s N=%d**: %s. Device model: %s. Outcome: %d completed, %d failed. ", run.Kind, run.N, run.Mode,
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
	sb.WriteString("\n## Goals\n\n")
	sb.WriteString(r.goals())
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

func (r *Report) find(kind string, n int) *Run {
	for i := range r.Runs {
		if r.Runs[i].Kind == kind && r.Runs[i].N == n {
			return &r.Runs[i]
		}
	}
	return nil
}

// goals says, from this report's numbers only, where each goal of issue 10
// stands.
func (r *Report) goals() string {
	var sb strings.Builder
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**not met**"
	}
	for _, k := range []string{"sp-firmware", "agent-install"} {
		if run := r.find(k, 1000); run != nil && run.Concurrency == 100 {
			fmt.Fprintf(&sb, "- Overhead ≤ 1.10 at N=1000, P=100 (%s): %.2f — %s.\n", k, run.Overhead, mark(run.Overhead <= 1.10))
		} else {
			fmt.Fprintf(&sb, "- Overhead ≤ 1.10 at N=1000, P=100 (%s): not measured in this report.\n", k)
		}
	}
	worst, worstMax := 0.0, int64(0)
	for _, run := range r.Runs {
		if run.Kind == "sp-firmware" {
			worst = max(worst, run.TargetWorkflowEvents)
			worstMax = max(worstMax, run.TargetWorkflowMax)
		}
	}
	if worstMax > 0 {
		fmt.Fprintf(&sb, "- ≤ 60 history events per SP firmware update: mean %.1f, largest %d — %s.\n",
			worst, worstMax, mark(worstMax <= 60))
	}
	for _, slow := range r.HistoryCheck {
		var fast *Run
		for i := range r.Runs {
			if r.Runs[i].Kind == slow.Kind && (fast == nil || r.Runs[i].N < fast.N) {
				fast = &r.Runs[i]
			}
		}
		if fast == nil || slow.TargetWorkflowEvents == 0 {
			continue
		}
		same := slow.TargetWorkflowEvents <= fast.TargetWorkflowEvents+0.5
		fmt.Fprintf(&sb, "- History independent of device time (%s): %.1f events per target with %s devices vs %.1f with %s devices — %s.\n",
			slow.Kind, slow.TargetWorkflowEvents, secs(slow.DeviceTimeSec), fast.TargetWorkflowEvents, secs(fast.DeviceTimeSec), mark(same))
	}
	peak, inflight, workers := 0.0, 0, 0
	for _, run := range r.Runs {
		if run.WorkerPeakRSSMiB > peak {
			peak, inflight, workers = run.WorkerPeakRSSMiB, min(run.Concurrency, run.N), run.Workers
		}
	}
	if peak > 0 {
		fmt.Fprintf(&sb, "- Worker peak RSS < 300 MiB with 1,000 updates in flight: largest worker peak %.0f MiB with %d updates in flight "+
			"over %d worker process(es)", peak, inflight, workers)
		if inflight >= 1000 {
			fmt.Fprintf(&sb, " — %s.\n", mark(peak < 300))
		} else {
			sb.WriteString(" — 1,000 in flight not measured here (needs P=1000).\n")
		}
	}
	for _, run := range r.Runs {
		if run.Kind == "agent-install" {
			fmt.Fprintf(&sb, "- Agent fan-out N=%d: largest parent run %d events (warn 10,240; fail 51,200), %s.\n",
				run.N, run.ParentMaxEvents, run.Outcome.Note)
		}
	}
	sb.WriteString("- Fan-out of 10,000 agent installs: not run here unless N=10000 is listed above.\n")
	return sb.String()
}

// plot draws makespan (fleetsaga, ideal, baseline) and overhead against N
// into base.svg and base.png.
func (r *Report) plot(base string) error {
	kinds := map[string]bool{}
	for _, run := range r.Runs {
		kinds[run.Kind] = true
	}
	var names []string
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)

	top := plot.New()
	top.Title.Text = "Makespan vs fleet size"
	top.X.Label.Text = "N (updates)"
	top.Y.Label.Text = "seconds"
	top.X.Scale, top.Y.Scale = plot.LogScale{}, plot.LogScale{}
	top.X.Tick.Marker, top.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	top.Legend.Top, top.Legend.Left = true, true
	bottom := plot.New()
	bottom.Title.Text = fmt.Sprintf("Overhead ratio wall / ideal (P=%d)", r.Config.Concurrency)
	bottom.X.Label.Text = "N (updates)"
	bottom.Y.Label.Text = "wall / ideal"
	bottom.X.Scale = plot.LogScale{}
	bottom.X.Tick.Marker = plot.LogTicks{Prec: -1}
	bottom.Y.Min = 0
	bottom.Legend.Top = true

	// Explicit ranges: a log axis over a single N would be degenerate.
	minX, maxX, minY, maxY := 0.0, 0.0, 0.0, 0.0
	for _, run := range r.Runs {
		if run.WallSec <= 0 {
			continue
		}
		x := float64(run.N)
		ys := []float64{run.WallSec, max(run.IdealSec, 1e-3)}
		if run.Baseline != nil && run.Baseline.WallSec > 0 {
			ys = append(ys, run.Baseline.WallSec)
		}
		if minX == 0 || x < minX {
			minX = x
		}
		maxX = max(maxX, x)
		for _, y := range ys {
			if minY == 0 || y < minY {
				minY = y
			}
			maxY = max(maxY, y)
		}
	}
	if minX > 0 {
		top.X.Min, top.X.Max = minX/2, maxX*2
		bottom.X.Min, bottom.X.Max = minX/2, maxX*2
		top.Y.Min, top.Y.Max = minY/2, maxY*2
	}

	for ki, k := range names {
		var wall, ideal, base, over plotter.XYs
		for _, run := range r.Runs {
			if run.Kind != k || run.WallSec <= 0 {
				continue
			}
			x := float64(run.N)
			wall = append(wall, plotter.XY{X: x, Y: run.WallSec})
			ideal = append(ideal, plotter.XY{X: x, Y: max(run.IdealSec, 1e-3)})
			over = append(over, plotter.XY{X: x, Y: run.Overhead})
			if run.Baseline != nil && run.Baseline.WallSec > 0 {
				base = append(base, plotter.XY{X: x, Y: run.Baseline.WallSec})
			}
		}
		for _, xys := range []plotter.XYs{wall, ideal, base, over} {
			sort.Slice(xys, func(i, j int) bool { return xys[i].X < xys[j].X })
		}
		// One colour per kind; line style and marker per series.
		col := plotutil.Color(ki)
		series := []struct {
			name   string
			xys    plotter.XYs
			dashes []vg.Length
			shape  int
		}{
			{k + ": fleetsaga", wall, nil, 0},
			{k + ": ideal ceil(N/P)×t", ideal, []vg.Length{vg.Points(5), vg.Points(3)}, 1},
			{fmt.Sprintf("%s: baseline loop (%d)", k, r.Config.BaselineConcurrency), base, []vg.Length{vg.Points(1), vg.Points(2)}, 2},
		}
		for _, s := range series {
			if len(s.xys) == 0 {
				continue
			}
			l, p, err := plotter.NewLinePoints(s.xys)
			if err != nil {
				return err
			}
			l.Color, l.Dashes = col, s.dashes
			p.Color, p.Shape = col, plotutil.Shape(s.shape)
			top.Add(l, p)
			top.Legend.Add(s.name, l, p)
		}
		if len(over) > 0 {
			l, p, err := plotter.NewLinePoints(over)
			if err != nil {
				return err
			}
			l.Color = col
			p.Color, p.Shape = col, plotutil.Shape(0)
			bottom.Add(l, p)
			bottom.Legend.Add(k, l, p)
		}
	}
	goal := plotter.NewFunction(func(float64) float64 { return 1.10 })
	goal.Color = color.RGBA{R: 200, A: 255}
	goal.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	bottom.Add(goal)
	bottom.Legend.Add("goal 1.10", goal)

	plots := [][]*plot.Plot{{top}, {bottom}}
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 6,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	w, h := vg.Points(640), vg.Points(760)
	svg := vgsvg.New(w, h)
	png := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))}
	for _, c := range []vg.CanvasSizer{svg, png} {
		canvases := plot.Align(plots, tiles, draw.New(c))
		top.Draw(canvases[0][0])
		bottom.Draw(canvases[1][0])
	}
	for path, wt := range map[string]io.WriterTo{base + ".svg": svg, base + ".png": png} {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if _, err := wt.WriteTo(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
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
