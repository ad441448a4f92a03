package bench

import (
	"context"
	"fmt"
	"os"
	"time"
)

// Run is the result of one kind at one fleet size.
type Run struct {
	Kind        string `json:"kind"`
	N           int    `json:"n"`
	Concurrency int    `json:"concurrency"`
	Workers     int    `json:"workers"`
	Mode        string `json:"mode"`
	Started     string `json:"started"`
	// SpeedUp is fleetsim's device speed-up for this run.
	SpeedUp float64 `json:"speedUp"`
	// Waves is ceil(N/P).
	Waves int `json:"waves"`

	// DeviceTimeSec is one device's busy time from the spec timings.
	DeviceTimeSec   float64 `json:"deviceTimeSec"`
	DeviceTimeModel string  `json:"deviceTimeModel"`
	// IdealSec is the physical limit: ceil(N/P) × device time.
	IdealSec float64 `json:"idealSec"`
	WallSec  float64 `json:"wallSec"`
	// Overhead is wall / ideal.
	Overhead float64 `json:"overhead"`
	// ExtraPerWaveSec is (wall − ideal) / waves: what orchestration adds
	// to each wave of P devices, in seconds (it does not shrink with the
	// speed-up, so it says what the ratio would be with slower devices).
	ExtraPerWaveSec float64 `json:"extraPerWaveSec"`

	Outcome outcome      `json:"outcome"`
	Verify  verification `json:"verify"`

	History map[string]*TypeHistory `json:"history"`
	// Per target (N): every workflow type together, and the per-target
	// workflow alone.
	EventsPerTarget       float64 `json:"eventsPerTarget"`
	TargetWorkflowEvents  float64 `json:"targetWorkflowEventsPerTarget"`
	TargetWorkflowMax     int64   `json:"targetWorkflowMaxEvents"`
	WorkflowTasksPerTgt   float64 `json:"workflowTasksPerTarget"`
	ActivityTasksPerTgt   float64 `json:"activityTasksPerTarget"`
	HistoryBytesPerTarget float64 `json:"historyBytesPerTarget"`
	ParentMaxEvents       int64   `json:"parentMaxEventsOneRun"`
	// MaxRunEvents is the longest history of any single run (each run of a
	// continue-as-new chain, each child): Temporal's limit is 10,240.
	MaxRunEvents int64 `json:"maxRunEvents"`

	// Worker-side figures (SDK metrics and /proc).
	WorkerTasks       WorkerTasks `json:"workerTasks"`
	WorkerWFTPerTgt   float64     `json:"workerWorkflowTasksPerTarget"`
	WorkerActPerTgt   float64     `json:"workerActivityTasksPerTarget"`
	WorkerCPUSec      float64     `json:"workerCpuSec"`
	WorkerCPUPerTgtMs float64     `json:"workerCpuPerTargetMs"`
	WorkerPeakRSSMiB  float64     `json:"workerPeakRssMiB"`
	WorkerPeakRSSEach []float64   `json:"workerPeakRssMiBEach"`
	TemporalCPUSec    float64     `json:"temporalServerCpuSec"`
	// TemporalCPUPerTgtMs is the Temporal server's CPU per target; with
	// WorkerCPUPerTgtMs it is the orchestration's CPU per update.
	TemporalCPUPerTgtMs float64 `json:"temporalServerCpuPerTargetMs"`
	FleetsimCPUSec      float64 `json:"fleetsimCpuSec"`
	PostgresCPUSec      float64 `json:"postgresCpuSec"`
	BenchCPUSec         float64 `json:"benchProcessCpuSec"`
	// OtherCPUCores is the average CPU (in cores) used on the machine by
	// processes outside this bench during the Temporal phase.
	OtherCPUCores float64 `json:"otherCpuCores"`
	SystemCPUBusy float64 `json:"systemCpuBusyCores"`
	LoadAvgAfter  float64 `json:"loadAvg1After"`

	PGStatements      int64            `json:"pgStatements"`
	PGStatementsPerTg float64          `json:"pgStatementsPerTarget"`
	PGTop             []StatementCount `json:"pgTopStatements,omitempty"`
	// LedgerRows is the rows the run wrote, per ledger table, and in all.
	LedgerRows        map[string]int64 `json:"ledgerRows,omitempty"`
	LedgerRowsWritten int64            `json:"ledgerRowsWritten"`

	Baseline *BaselineRun `json:"baseline,omitempty"`
	// BaselineSkipped says why Baseline is nil, when it is on purpose.
	BaselineSkipped string `json:"baselineSkipped,omitempty"`
	// SpeedupVsBaseline is baseline wall / fleetsaga wall.
	SpeedupVsBaseline float64  `json:"speedupVsBaseline,omitempty"`
	Errors            []string `json:"errors,omitempty"`
}

// BaselineRun is the plain loop's figures.
type BaselineRun struct {
	Concurrency int          `json:"concurrency"`
	WallSec     float64      `json:"wallSec"`
	IdealSec    float64      `json:"idealSec"`
	Overhead    float64      `json:"overhead"`
	Outcome     outcome      `json:"outcome"`
	Verify      verification `json:"verify"`
	CPUSec      float64      `json:"cpuSec"`
}

type snapshot struct {
	at         time.Time
	workerCPU  []time.Duration
	tasks      []WorkerTasks
	temporal   time.Duration
	fleetsim   time.Duration
	postgres   time.Duration
	self       time.Duration
	sysBusy    time.Duration
	statements int64
}

func (b *Bench) snap(ctx context.Context, st *runStack) snapshot {
	s := snapshot{at: time.Now()}
	for _, w := range st.workers {
		c, _ := readProcCPU(w.pid())
		s.workerCPU = append(s.workerCPU, c.Self)
		m, err := scrape(ctx, w.metrics)
		if err != nil {
			b.log.Warn().Err(err).Str("worker", w.identity).Msg("scrape metrics")
			s.tasks = append(s.tasks, WorkerTasks{})
			continue
		}
		s.tasks = append(s.tasks, workerTasks(m))
	}
	if st.temporalPID != 0 {
		s.temporal = treeCPU(st.temporalPID)
	}
	if st.fleetsim != nil {
		c, _ := readProcCPU(st.fleetsim.Cmd.Process.Pid)
		s.fleetsim = c.Self
	}
	if pid := b.pgc.postmasterPID(ctx); pid != 0 {
		s.postgres = treeCPU(pid)
	}
	if c, err := readProcCPU(os.Getpid()); err == nil {
		s.self = c.Self
	}
	s.sysBusy, _ = systemCPU()
	var err error
	if s.statements, err = b.pgc.count(ctx, st.ledgerDB); err != nil {
		b.log.Warn().Err(err).Msg("count statements")
	}
	return s
}

// runOpts vary a run from the configuration (the history check runs
// small fleets of slower devices).
type runOpts struct {
	p        int
	speedUp  float64
	baseline bool
	// noBaseline says why baseline is off, for the table.
	noBaseline string
	label      string
}

// runOne measures kind d at fleet size n: fleetsaga first, then (on a
// fresh fleet) the baseline loop.
func (b *Bench) runOne(ctx context.Context, d driver, n int, o runOpts) (*Run, error) {
	p := o.p
	name := fmt.Sprintf("%s-%d%s", d.kind(), n, o.label)
	log := b.log.With().Str("kind", string(d.kind())).Int("n", n).Float64("speed_up", o.speedUp).Logger()
	s, err := d.spec(n, o.speedUp)
	if err != nil {
		return nil, err
	}
	dev, model := d.deviceTime(s)
	r := &Run{Kind: string(d.kind()), N: n, Concurrency: p, Workers: b.cfg.Workers, SpeedUp: o.speedUp,
		Started: time.Now().UTC().Format(time.RFC3339), DeviceTimeSec: dev.Seconds(), DeviceTimeModel: model}
	r.IdealSec = idealMakespan(n, p, dev).Seconds()
	r.Waves = (n + p - 1) / p

	log.Info().Msg("starting the run's stack")
	st, err := b.startRun(ctx, name, s)
	if err != nil {
		return r, err
	}
	defer st.stop()

	// Let the workers settle after start (migrations, pollers) before the
	// baseline snapshot.
	time.Sleep(time.Second)
	rowsBefore, err := ledgerRows(ctx, st.ledgerURL)
	if err != nil {
		r.Errors = append(r.Errors, "ledger rows: "+err.Error())
	}
	before := b.snap(ctx, st)
	log.Info().Float64("ideal_s", r.IdealSec).Str("device", dev.String()).Msg("fleetsaga phase")
	rctx, cancel := context.WithTimeout(ctx, b.cfg.RunTimeout)
	out, runErr := d.run(rctx, st.client, n, p)
	cancel()
	after := b.snap(ctx, st)
	r.WallSec = after.at.Sub(before.at).Seconds()
	r.Outcome = out
	r.Mode = out.Mode
	if r.IdealSec > 0 {
		r.Overhead = r.WallSec / r.IdealSec
		r.ExtraPerWaveSec = (r.WallSec - r.IdealSec) / float64(r.Waves)
	}
	if runErr != nil {
		r.Errors = append(r.Errors, "fleetsaga phase: "+runErr.Error())
	}
	r.fill(before, after, n)
	r.LoadAvgAfter = loadAvg1()
	for _, w := range st.workers {
		m, _ := readProcMem(w.pid())
		mib := float64(m.Peak) / (1 << 20)
		r.WorkerPeakRSSEach = append(r.WorkerPeakRSSEach, mib)
		r.WorkerPeakRSSMiB = max(r.WorkerPeakRSSMiB, mib)
	}
	r.PGTop = b.pgc.top(ctx, st.ledgerDB, 8)
	if rowsAfter, err := ledgerRows(ctx, st.ledgerURL); err != nil {
		r.Errors = append(r.Errors, "ledger rows: "+err.Error())
	} else {
		r.LedgerRows, r.LedgerRowsWritten = rowsWritten(rowsBefore, rowsAfter)
	}
	r.Verify = d.verify(ctx, st.fleetsimURL, n)
	log.Info().Float64("wall_s", r.WallSec).Float64("overhead", r.Overhead).Int("completed", out.Completed).
		Int("failed", out.Failed).Bool("verified", r.Verify.OK).Msg("fleetsaga phase done")

	// Histories after the measured window (reading them loads the server).
	hist, err := collectHistories(ctx, st.client, "default", out.Workflows+n)
	if err != nil {
		r.Errors = append(r.Errors, "history: "+err.Error())
	}
	r.History = hist
	r.summariseHistory(d.targetWorkflow(), n)
	st.stopWorkers()

	r.BaselineSkipped = o.noBaseline
	if o.baseline {
		bl, err := b.runBaseline(ctx, st, d, n, dev)
		if err != nil {
			r.Errors = append(r.Errors, "baseline: "+err.Error())
		}
		r.Baseline = bl
		if bl != nil && r.WallSec > 0 {
			r.SpeedupVsBaseline = bl.WallSec / r.WallSec
		}
	}
	if runErr != nil {
		return r, runErr
	}
	return r, nil
}

func (r *Run) fill(before, after snapshot, n int) {
	var cpu time.Duration
	var tasks WorkerTasks
	tasks.Scraped = true
	for i := range after.workerCPU {
		cpu += after.workerCPU[i] - before.workerCPU[i]
		tasks = tasks.add(after.tasks[i].sub(before.tasks[i]))
	}
	r.WorkerCPUSec = cpu.Seconds()
	r.WorkerCPUPerTgtMs = float64(cpu.Milliseconds()) / float64(n)
	r.WorkerTasks = tasks
	r.WorkerWFTPerTgt = tasks.WorkflowTasks / float64(n)
	r.WorkerActPerTgt = tasks.ActivityTasks / float64(n)
	r.TemporalCPUSec = (after.temporal - before.temporal).Seconds()
	r.TemporalCPUPerTgtMs = r.TemporalCPUSec * 1000 / float64(n)
	r.FleetsimCPUSec = (after.fleetsim - before.fleetsim).Seconds()
	r.PostgresCPUSec = (after.postgres - before.postgres).Seconds()
	r.BenchCPUSec = (after.self - before.self).Seconds()
	wall := after.at.Sub(before.at).Seconds()
	busy := (after.sysBusy - before.sysBusy).Seconds()
	ours := r.WorkerCPUSec + r.TemporalCPUSec + r.FleetsimCPUSec + r.PostgresCPUSec + r.BenchCPUSec
	if wall > 0 {
		r.SystemCPUBusy = busy / wall
		r.OtherCPUCores = max(0, busy-ours) / wall
	}
	r.PGStatements = after.statements - before.statements
	r.PGStatementsPerTg = float64(r.PGStatements) / float64(n)
}

func (r *Run) summariseHistory(targetType string, n int) {
	var events, wft, act, bytes int64
	for typ, h := range r.History {
		r.MaxRunEvents = max(r.MaxRunEvents, h.MaxEvents)
		events += h.Events
		wft += h.WorkflowTasks
		act += h.ActivityTasks
		bytes += h.SizeBytes
		if typ == targetType {
			r.TargetWorkflowEvents = float64(h.Events) / float64(max(h.Executions, 1))
			r.TargetWorkflowMax = h.MaxEvents
		} else {
			r.ParentMaxEvents = max(r.ParentMaxEvents, h.MaxEvents)
		}
	}
	r.EventsPerTarget = float64(events) / float64(n)
	r.WorkflowTasksPerTgt = float64(wft) / float64(n)
	r.ActivityTasksPerTgt = float64(act) / float64(n)
	r.HistoryBytesPerTarget = float64(bytes) / float64(n)
}

// runBaseline restarts fleetsim (every device back at its old version) and
// does the same device work with the plain loop.
func (b *Bench) runBaseline(ctx context.Context, st *runStack, d driver, n int, dev time.Duration) (*BaselineRun, error) {
	if err := st.startFleetsim(ctx); err != nil {
		return nil, err
	}
	conc := b.cfg.BaselineConcurrency
	bl := &BaselineRun{Concurrency: conc, IdealSec: idealMakespan(n, conc, dev).Seconds()}
	b.log.Info().Str("kind", string(d.kind())).Int("n", n).Int("concurrency", conc).Float64("ideal_s", bl.IdealSec).Msg("baseline phase")
	self0, _ := readProcCPU(os.Getpid())
	t0 := time.Now()
	out, err := d.baseline(ctx, st.endpoints(), n, conc)
	bl.WallSec = time.Since(t0).Seconds()
	self1, _ := readProcCPU(os.Getpid())
	bl.CPUSec = (self1.Self - self0.Self).Seconds()
	bl.Outcome = out
	if bl.IdealSec > 0 {
		bl.Overhead = bl.WallSec / bl.IdealSec
	}
	bl.Verify = d.verify(ctx, st.fleetsimURL, n)
	b.log.Info().Float64("wall_s", bl.WallSec).Float64("overhead", bl.Overhead).Bool("verified", bl.Verify.OK).Msg("baseline phase done")
	return bl, err
}
