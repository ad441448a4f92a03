// Command bench runs fleetsaga's fleet-scale benchmark: N SP
// firmware updates and N agent installs at concurrency P on the real stack,
// against the physical limit and a plain fixed-concurrency loop, and writes
// bench/results/results.{json,md} and plot.svg. `make bench` runs it.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetsaga/fleetsaga/bench"
	"github.com/fleetsaga/fleetsaga/internal/logging"
	"github.com/fleetsaga/fleetsaga/workflows"
)

type usageError struct{ error }

func main() {
	if err := newCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil {
		return v
	}
	return def
}

func newCommand() *cobra.Command {
	var (
		cfg      bench.Config
		ns       string
		kinds    string
		large    bool
		logLevel string
		render   string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure fleetsaga rollouts against the physical limit and a plain loop",
		Example: `  bench                                  # N=100,1000, both kinds, P=100 (make bench)
  bench --large                          # also N=5000 (BENCH_LARGE=1 make bench)
  bench --n 10000 --kinds agent-install --skip-baseline --real-time-n 0 --history-check=false --append
                                         # the 10,000-server fan-out, added to the table (make bench-large)
  bench --n 200 --kinds agent-install --concurrency 50 --skip-baseline`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if render != "" {
				return bench.Render(render)
			}
			for _, f := range strings.Split(ns, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || n < 1 {
					return usageError{fmt.Errorf("--n: %q is not a fleet size", f)}
				}
				cfg.Ns = append(cfg.Ns, n)
			}
			if large {
				cfg.Ns = append(cfg.Ns, 5000)
			}
			for _, k := range strings.Split(kinds, ",") {
				cfg.Kinds = append(cfg.Kinds, workflows.Kind(strings.TrimSpace(k)))
			}
			log, err := logging.New(os.Stderr, logLevel, logging.FormatAuto)
			if err != nil {
				return usageError{err}
			}
			cfg.Log = log
			b, err := bench.New(cfg)
			if err != nil {
				return usageError{err}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			rep, err := b.Run(ctx)
			if rep != nil {
				fmt.Println(rep.Markdown())
				fmt.Printf("results: %s/results.json, results.md, plot.svg, plot.png\n", cfg.OutDir)
			}
			if err != nil {
				return err
			}
			if len(rep.Errors) > 0 {
				return fmt.Errorf("%d run(s) failed", len(rep.Errors))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&ns, "n", envOr("BENCH_N", "100,1000"), "comma-separated fleet sizes (env BENCH_N)")
	f.BoolVar(&large, "large", os.Getenv("BENCH_LARGE") == "1", "also run N=5000 (env BENCH_LARGE=1)")
	f.StringVar(&kinds, "kinds", envOr("BENCH_KINDS", "sp-firmware,agent-install"), "update kinds (env BENCH_KINDS)")
	f.IntVar(&cfg.Concurrency, "concurrency", envInt("BENCH_P", 100), "P: updates in flight (env BENCH_P)")
	f.IntVar(&cfg.BaselineConcurrency, "baseline-concurrency", 5, "the plain loop's fixed concurrency")
	f.IntVar(&cfg.Workers, "workers", envInt("BENCH_WORKERS", 2), "worker processes (env BENCH_WORKERS)")
	f.Float64Var(&cfg.SpeedUp, "speed-up", envFloat("BENCH_SPEEDUP", 30), "fleetsim device speed-up (env BENCH_SPEEDUP)")
	f.Int64Var(&cfg.Seed, "seed", 1, "fleet generation seed")
	f.Int64Var(&cfg.SPImageSize, "sp-image-size", 1<<20, "SP image size in bytes")
	f.StringVar(&cfg.SPMode, "sp-mode", envOr("BENCH_SP_MODE", "rollout"), "rollout (plans of ≤400 side by side) or direct (sliding window from the bench)")
	f.StringVar(&cfg.Dir, "dir", ".stack/bench", "state directory (PostgreSQL cluster, run logs)")
	f.StringVar(&cfg.BinDir, "bin", "bin", "directory with the worker and fleetsim binaries")
	f.StringVar(&cfg.OutDir, "out", "bench/results", "results directory")
	f.StringVar(&cfg.WorkerLogLevel, "worker-log-level", "info", "workers' log level")
	f.BoolVar(&cfg.KeepDatabases, "keep-databases", false, "keep each run's ledger database")
	f.BoolVar(&cfg.SkipBaseline, "skip-baseline", false, "do not run the plain-loop baseline")
	f.IntVar(&cfg.RealTimeN, "real-time-n", envInt("BENCH_REAL_TIME_N", 1000), "also run each kind at this N with real device times (speed-up 1, no loop); 0 disables (env BENCH_REAL_TIME_N)")
	f.BoolVar(&cfg.Append, "append", false, "keep the runs already in --out/results.json that this invocation does not repeat")
	f.BoolVar(&cfg.HistoryCheck, "history-check", true, "also run N=10 of each kind with devices 10× slower, to compare history per target")
	f.DurationVar(&cfg.RunTimeout, "run-timeout", 45*time.Minute, "bound on one kind at one N")
	f.StringVar(&logLevel, "log-level", "info", "bench log level")
	f.StringVar(&render, "render", "", "only rewrite results.md and the plots from this results.json")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	return cmd
}
