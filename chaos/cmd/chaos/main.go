// Command chaos runs the chaos harness (package chaos) against the real
// stack and prints its table; it exits 0 only when every invariant held and
// all the promised chaos happened.
//
//	make chaos                    # default seed
//	make chaos SEED=7             # another seed (replays a run exactly)
//	bin/chaos --short --seed 3    # the small variant `make test` runs
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetsaga/fleetsaga/chaos"
	"github.com/fleetsaga/fleetsaga/internal/logging"
)

type usageError struct{ error }

func main() {
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	var (
		seed     int64
		short    bool
		owners   bool
		dir      string
		binDir   string
		uiPort   int
		temporal string
		timeout  time.Duration
		kills    int
		graceful int
		logLevel string
		workers  int
		resets   int
		blips    int
	)
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Attack the real stack during a rollout over every update kind, then check the invariants",
		Example: `  chaos --bin-dir bin --dir .stack/chaos --seed 1
  chaos --short --seed 7`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := chaos.Full(seed)
			if short {
				cfg = chaos.Short(seed)
			}
			cfg.NoOwners = !owners
			if cmd.Flags().Changed("timeout") {
				cfg.Timeout = timeout
			}
			if cmd.Flags().Changed("kills") {
				cfg.Kills = kills
			}
			if cmd.Flags().Changed("graceful-restarts") {
				cfg.GracefulRestarts = graceful
			}
			if cmd.Flags().Changed("workers") {
				cfg.Workers = workers
			}
			if cmd.Flags().Changed("resets") {
				cfg.Resets = resets
			}
			if cmd.Flags().Changed("pg-blips") {
				cfg.PGBlips = blips
			}
			var err error
			if cfg.Dir, err = filepath.Abs(filepath.Join(dir, fmt.Sprintf("seed-%d", seed))); err != nil {
				return usageError{err}
			}
			if cfg.BinDir, err = filepath.Abs(binDir); err != nil {
				return usageError{err}
			}
			for _, b := range []string{"worker", "fleetsim", "starter"} {
				if _, err := os.Stat(filepath.Join(cfg.BinDir, b)); err != nil {
					return usageError{fmt.Errorf("--bin-dir %s has no %s binary (make build)", binDir, b)}
				}
			}
			cfg.UIPort = uiPort
			cfg.Temporal = temporal
			cfg.Out = os.Stdout
			if cfg.Log, err = logging.New(os.Stderr, logLevel, logging.FormatConsole); err != nil {
				return usageError{err}
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			rep, err := chaos.Run(ctx, cfg)
			if err != nil {
				return err
			}
			if !rep.OK() {
				return fmt.Errorf("seed %d: %d violation(s)%s; logs in %s", seed, rep.Violations(), shortfall(rep), cfg.Dir)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Int64Var(&seed, "seed", 1, "seed for the fleet, the plan, the faults and the chaos schedule")
	f.BoolVar(&short, "short", false, "the small variant (a few targets, 3 kills)")
	f.BoolVar(&owners, "owners", true, "fleetsim plays the other owners (Nexus's executor and MGS driver, the MCO; issue 27), as on a real rack and cluster; --owners=false turns them off (zone expunge in direct mode, fleetsaga patches every MachineSet)")
	f.StringVar(&dir, "dir", ".stack/chaos", "state directory (a seed-N subdirectory is wiped and kept for a post-mortem)")
	f.StringVar(&binDir, "bin-dir", "bin", "directory with the built worker, fleetsim and starter binaries")
	f.IntVar(&uiPort, "ui-port", 0, "serve the Temporal Web UI on this port (0 = none)")
	f.StringVar(&temporal, "temporal", "dev", "Temporal to run: dev (the CLI's dev server) or cluster (the real server on PostgreSQL)")
	f.DurationVar(&timeout, "timeout", 0, "bound on the rollout (default 30m, 2m with --short)")
	f.IntVar(&kills, "kills", 0, "minimum worker SIGKILLs (default 12, 3 with --short)")
	f.IntVar(&graceful, "graceful-restarts", 0, "minimum workers restarted with SIGTERM, in turn (default 4, 1 with --short; 0 = none)")
	f.IntVar(&workers, "workers", 3, "worker processes")
	f.IntVar(&resets, "resets", 0, "workflow resets of running children, the reset points in turn (default 18, 3 with --short; 0 = none)")
	f.IntVar(&blips, "pg-blips", 0, "PostgreSQL blips while SP/host starts are in flight (default 2, 1 with --short)")
	f.StringVar(&logLevel, "log-level", "warn", "log level of the harness and the stack")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	return cmd
}

func shortfall(r *chaos.Report) string {
	out := ""
	if s := r.ChaosShortfall(); s != "" {
		out += "; chaos incomplete: " + s
	}
	if s := r.Uncovered(); s != "" {
		out += "; not exercised: " + s
	}
	return out
}
