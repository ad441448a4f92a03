// Package bench measures fleetsaga at fleet scale against the physical
// limit set by the simulated devices: for each fleet size N it runs N SP
// firmware updates and N agent installs at concurrency P on the real stack
// (PostgreSQL, a Temporal dev server, fleetsim, worker processes), then the
// same device work with a plain fixed-concurrency loop without Temporal,
// and writes JSON, a Markdown table and a plot under bench/results/.
package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Config is one bench invocation.
type Config struct {
	// Ns are the fleet sizes, in order.
	Ns []int
	// Kinds to run (sp-firmware, agent-install).
	Kinds []workflows.Kind
	// Concurrency is P: updates in flight at once.
	Concurrency int
	// BaselineConcurrency is the plain loop's fixed concurrency (5).
	BaselineConcurrency int
	// Workers is the number of worker processes.
	Workers int
	// SpeedUp divides fleetsim's real-world device timings.
	SpeedUp float64
	Seed    int64
	// SPImageSize is the size of the SP image the bench flashes.
	SPImageSize int64
	// SPMode is how the N SP updates are started: "rollout" (rollout plans
	// of at most 400 updates, run side by side with P split between them) or
	// "direct" (N workflows started by the bench in a sliding window of P).
	SPMode string
	// Dir keeps PostgreSQL and the runs' logs; BinDir has worker and
	// fleetsim; OutDir receives the results.
	Dir, BinDir, OutDir string
	WorkerLogLevel      string
	KeepDatabases       bool
	SkipBaseline        bool
	// RealTimeN, when > 0, runs each kind once more at N=RealTimeN with
	// real device times (speed-up 1) and no baseline, which would take
	// about 30 times as long as the run itself.
	RealTimeN int
	// Append keeps the runs of OutDir/results.json that this invocation
	// does not repeat, so a separate target (bench-large) adds its rows to
	// the same table and plot.
	Append bool
	// HistoryCheck runs each kind once more on a small fleet of devices
	// ten times slower, to compare history events per target.
	HistoryCheck bool
	// RunTimeout bounds one kind at one N (Temporal phase).
	RunTimeout time.Duration
	Log        zerolog.Logger
}

// Bench runs a Config.
type Bench struct {
	cfg     Config
	log     zerolog.Logger
	pg      *devstack.Postgres
	pgDir   string
	pgc     *pgCounter
	report  *Report
	drivers map[workflows.Kind]driver
}

// driver knows one update kind: its fleet, its device time, how to run N
// updates through fleetsaga and through the baseline loop, and how to check
// the fleet afterwards.
type driver interface {
	kind() workflows.Kind
	// targetWorkflow is the workflow type that runs once per target.
	targetWorkflow() string
	spec(n int, speedUp float64) (*spec.Spec, error)
	deviceTime(s *spec.Spec) (time.Duration, string)
	run(ctx context.Context, c client.Client, n, p int) (outcome, error)
	baseline(ctx context.Context, ep fleet.Endpoints, n, conc int) (outcome, error)
	verify(ctx context.Context, fleetsimURL string, n int) verification
}

// outcome is how a phase ended.
type outcome struct {
	Mode      string `json:"mode"`
	Completed int    `json:"completed"`
	Failed    int    `json:"failed"`
	Note      string `json:"note,omitempty"`
	// Workflows is how many top-level workflows the bench started.
	Workflows int `json:"workflowsStarted"`
}

// verification is what fleetsim's truth says after a phase.
type verification struct {
	OK      bool   `json:"ok"`
	Updated int    `json:"updated"`
	Note    string `json:"note,omitempty"`
	// DeviceBusy is fleetsim's own record of how long each device worked
	// (first update start to its end), to check the ideal's model.
	DeviceBusyMedianSec float64 `json:"deviceBusyMedianSec"`
	DeviceBusyMaxSec    float64 `json:"deviceBusyMaxSec"`
	// Attempts is how many device-side updates fleetsim saw (retries show
	// up as more than one per device).
	Attempts int `json:"deviceAttempts"`
}

// New checks the configuration.
func New(cfg Config) (*Bench, error) {
	if len(cfg.Ns) == 0 {
		return nil, errors.New("no fleet sizes")
	}
	for _, n := range cfg.Ns {
		if n < 1 {
			return nil, fmt.Errorf("fleet size %d must be >= 1", n)
		}
	}
	if cfg.Concurrency < 1 || cfg.BaselineConcurrency < 1 || cfg.Workers < 1 {
		return nil, errors.New("concurrency, baseline concurrency and workers must be >= 1")
	}
	if cfg.SpeedUp <= 0 {
		return nil, errors.New("speed-up must be > 0")
	}
	if cfg.SPMode != "rollout" && cfg.SPMode != "direct" {
		return nil, fmt.Errorf("sp mode %q: use rollout or direct", cfg.SPMode)
	}
	b := &Bench{cfg: cfg, log: cfg.Log, drivers: map[workflows.Kind]driver{}}
	for _, k := range cfg.Kinds {
		d, err := newDriver(k, &b.cfg)
		if err != nil {
			return nil, err
		}
		b.drivers[k] = d
	}
	for _, bin := range []string{"worker", "fleetsim"} {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, bin)); err != nil {
			return nil, fmt.Errorf("%s not built in %s (make build): %w", bin, cfg.BinDir, err)
		}
	}
	return b, nil
}

// Run runs every kind at every N and writes the results after each run.
func (b *Bench) Run(ctx context.Context) (*Report, error) {
	if err := os.MkdirAll(b.cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(b.cfg.OutDir, 0o755); err != nil {
		return nil, err
	}
	var err error
	b.pgDir, err = filepath.Abs(filepath.Join(b.cfg.Dir, "pg"))
	if err != nil {
		return nil, err
	}
	if b.pg, err = devstack.FindOrStartPostgres(ctx, b.pgDir, b.log); err != nil {
		return nil, err
	}
	defer func() {
		if err := b.pg.Stop(); err != nil {
			b.log.Warn().Err(err).Msg("stop PostgreSQL")
		}
	}()
	if b.pg, b.pgc, err = enablePGStatStatements(ctx, b.pg, b.pgDir, b.log); err != nil {
		return nil, err
	}
	defer b.pgc.close()
	b.log.Info().Str("mode", b.pgc.mode).Msg("PostgreSQL statement counting")

	b.report = newReport(b.cfg, b.pgc.mode)
	if b.cfg.Append {
		if err := b.report.keepPrevious(filepath.Join(b.cfg.OutDir, "results.json")); err != nil {
			return nil, err
		}
	}
	for _, n := range b.cfg.Ns {
		for _, k := range b.cfg.Kinds {
			if ctx.Err() != nil {
				return b.report, ctx.Err()
			}
			o := runOpts{p: b.cfg.Concurrency, speedUp: b.cfg.SpeedUp, baseline: !b.cfg.SkipBaseline}
			if !o.baseline {
				o.noBaseline = "skipped (--skip-baseline)"
			}
			if err := b.measure(ctx, k, n, o); err != nil {
				return b.report, err
			}
		}
	}
	if err := b.realTime(ctx); err != nil {
		return b.report, err
	}
	if b.cfg.HistoryCheck {
		b.historyCheck(ctx)
	}
	b.report.Finished = time.Now().UTC()
	return b.report, b.report.write(b.cfg.OutDir)
}

// measure runs kind k at fleet size n, records the run and writes the
// results; only a failure to write them is returned.
func (b *Bench) measure(ctx context.Context, k workflows.Kind, n int, o runOpts) error {
	r, err := b.runOne(ctx, b.drivers[k], n, o)
	if r != nil {
		b.report.put(*r)
	}
	if err != nil {
		b.log.Error().Err(err).Str("kind", string(k)).Int("n", n).Float64("speed_up", o.speedUp).Msg("run failed")
		b.report.Errors = append(b.report.Errors, fmt.Sprintf("%s N=%d speed-up %g: %v", k, n, o.speedUp, err))
	}
	return b.report.write(b.cfg.OutDir)
}

// realTime runs every kind at N=RealTimeN with real device times, so the
// overhead users see is in the table. The baseline is left out: at
// concurrency 5 it would take about 30 times as long.
func (b *Bench) realTime(ctx context.Context) error {
	if b.cfg.RealTimeN <= 0 {
		return nil
	}
	for _, k := range b.cfg.Kinds {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		o := runOpts{p: b.cfg.Concurrency, speedUp: 1, label: "-realtime",
			noBaseline: "not run at speed-up 1 (≈30× longer)"}
		if err := b.measure(ctx, k, b.cfg.RealTimeN, o); err != nil {
			return err
		}
	}
	return nil
}

// historyCheck runs every kind at N=10 with devices ten times slower than
// the main runs: if history events per target do not change, history does
// not grow with device time (no event per poll).
func (b *Bench) historyCheck(ctx context.Context) {
	const n = 10
	for _, k := range b.cfg.Kinds {
		if ctx.Err() != nil {
			return
		}
		o := runOpts{p: n, speedUp: b.cfg.SpeedUp / 10, label: "-slow"}
		r, err := b.runOne(ctx, b.drivers[k], n, o)
		if r != nil {
			b.report.HistoryCheck = putRun(b.report.HistoryCheck, *r)
		}
		if err != nil {
			b.report.Errors = append(b.report.Errors, fmt.Sprintf("history check %s: %v", k, err))
		}
		if werr := b.report.write(b.cfg.OutDir); werr != nil {
			b.log.Error().Err(werr).Msg("write results")
		}
	}
}

// artifactRoot is where the SP image is written and the workers' only
// --artifact-root (a worker reads no path artifact outside one), made if
// missing.
func (c *Config) artifactRoot() (string, error) {
	dir, err := filepath.Abs(filepath.Join(c.Dir, "artifacts"))
	if err != nil {
		return "", err
	}
	return dir, os.MkdirAll(dir, 0o755)
}
