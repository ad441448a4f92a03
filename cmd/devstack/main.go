// Command devstack runs fleetsaga's embedded dev stack without Docker:
// PostgreSQL (DATABASE_URL or a private cluster), the pinned Temporal (the
// CLI's dev server, or with --temporal=cluster the real server on that
// PostgreSQL) with its Web UI, fleetsim and workers.
//
//	devstack run [flags] -- CMD ARGS   bring the stack up, run CMD against it, tear down
//	devstack up [flags]                keep it running in the background (make up)
//	devstack down                      stop what `up` started (make down)
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/internal/logging"
)

func main() {
	root := &cobra.Command{Use: "devstack", Short: "fleetsaga's embedded dev stack", SilenceUsage: true, SilenceErrors: true}
	var o devstack.StackOptions
	var logFormat string
	bind := func(c *cobra.Command) {
		c.Flags().StringVar(&o.Dir, "dir", ".stack", "state directory (PostgreSQL cluster, logs)")
		c.Flags().StringVar(&o.BinDir, "bin", "bin", "directory with the worker and fleetsim binaries")
		c.Flags().IntVar(&o.UIPort, "ui-port", 8233, "Temporal Web UI port (0 = none)")
		c.Flags().StringVar(&o.FleetsimSpec, "fleetsim-spec", "", "start fleetsim with this spec")
		c.Flags().IntVar(&o.Workers, "workers", 0, "worker processes to start")
		c.Flags().BoolVar(&o.DemoSigner, "demo-signer", false, "make a demo operator's SSH key and allowed_signers in the state directory: workers verify approvals against it, commands sign with it (FLEETSAGA_SIGN_KEY)")
		c.Flags().BoolVar(&o.Prometheus, "prometheus", false, "start Prometheus (Debian's) scraping fleetsim's device health, for health checks")
		c.Flags().StringVar(&o.Temporal, "temporal", devstack.TemporalDev,
			"Temporal to run: dev (the CLI's dev server, SQLite) or cluster (the real server on the stack's PostgreSQL)")
		c.Flags().BoolVar(&o.PersistTemporal, "persist", false, "keep the dev server's history in a file in the state directory")
		c.Flags().StringVar(&o.ArtifactRoot, "artifact-root", "", "the only directory the workers read path: artifacts from (empty: the state directory's artifacts)")
		c.Flags().StringVar(&o.Database, "database", "", "the stack's own database, created afresh at every start (empty: the named server's database as it is)")
	}
	run := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS...]",
		Short: "bring the stack up, run CMD with DATABASE_URL/TEMPORAL_ADDRESS/FLEETSIM_URL set, tear it down",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCommand(cmd.Context(), o, logFormat, args)
		},
	}
	up := &cobra.Command{
		Use:   "up",
		Short: "start the stack in the background",
		RunE:  func(cmd *cobra.Command, _ []string) error { return upBackground(o) },
	}
	serve := &cobra.Command{Use: "serve", Hidden: true, RunE: func(cmd *cobra.Command, _ []string) error { return serveForeground(o) }}
	down := &cobra.Command{
		Use:   "down",
		Short: "stop the stack started by up",
		RunE:  func(cmd *cobra.Command, _ []string) error { return downBackground(o.Dir) },
	}
	bind(run)
	// run's output is read by people (make demo, make test): plain lines
	// unless JSON is asked for.
	run.Flags().StringVar(&logFormat, "log-format", string(logging.FormatConsole), "the stack's own log lines: console or json")
	bind(up)
	bind(serve)
	down.Flags().StringVar(&o.Dir, "dir", ".stack", "state directory")
	root.AddCommand(run, up, serve, down)
	if err := root.Execute(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "devstack:", err)
		os.Exit(1)
	}
}

func runCommand(ctx context.Context, o devstack.StackOptions, logFormat string, args []string) error {
	log, err := logging.New(os.Stderr, "info", logging.Format(logFormat))
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	s, err := devstack.StartStack(ctx, o, log)
	if err != nil {
		return err
	}
	defer s.Stop()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), s.Env()...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	return cmd.Run()
}

func serveForeground(o devstack.StackOptions) error {
	log, _ := logging.New(os.Stderr, "info", logging.FormatJSON)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	s, err := devstack.StartStack(ctx, o, log)
	if err != nil {
		return err
	}
	defer s.Stop()
	envFile := filepath.Join(o.Dir, "env")
	if err := os.WriteFile(envFile, []byte(strings.Join(s.Env(), "\n")+"\n"), 0o644); err != nil {
		return err
	}
	defer os.Remove(envFile)
	<-ctx.Done()
	return nil
}

func upBackground(o devstack.StackOptions) error {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	pidFile := filepath.Join(o.Dir, "devstack.pid")
	if pid, err := readPid(pidFile); err == nil && syscall.Kill(pid, 0) == nil {
		return fmt.Errorf("a stack is already running (pid %d); run 'make down' first", pid)
	}
	if o.UIPort != 0 {
		// Said here, not only in the background stack's log.
		if err := devstack.CheckPortFree(o.UIPort, "Temporal Web UI"); err != nil {
			return err
		}
	}
	_ = os.Remove(filepath.Join(o.Dir, "env"))
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logPath := filepath.Join(o.Dir, "devstack.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "serve", "--dir", o.Dir, "--bin", o.BinDir, "--ui-port", strconv.Itoa(o.UIPort),
		"--fleetsim-spec", o.FleetsimSpec, "--workers", strconv.Itoa(o.Workers), "--persist="+strconv.FormatBool(o.PersistTemporal),
		"--database", o.Database, "--temporal", o.Temporal, "--demo-signer="+strconv.FormatBool(o.DemoSigner),
		"--prometheus="+strconv.FormatBool(o.Prometheus), "--artifact-root", o.ArtifactRoot)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	envFile := filepath.Join(o.Dir, "env")
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); {
		if b, err := os.ReadFile(envFile); err == nil {
			fmt.Printf("stack is up (pid %d, log %s). Use it with:\n", cmd.Process.Pid, logPath)
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				fmt.Println("  export " + l)
			}
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("stack failed to start (%v); see %s", err, logPath)
		case <-time.After(300 * time.Millisecond):
		}
	}
	return fmt.Errorf("stack did not come up in time; see %s", logPath)
}

func downBackground(dir string) error {
	pidFile := filepath.Join(dir, "devstack.pid")
	pid, err := readPid(pidFile)
	if err != nil {
		fmt.Println("no stack running")
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		_ = os.Remove(pidFile)
		fmt.Println("no stack running")
		return nil
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			_ = os.Remove(pidFile)
			fmt.Println("stack stopped")
			return nil
		}
	}
	return fmt.Errorf("stack (pid %d) did not stop within 60s", pid)
}

func readPid(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
