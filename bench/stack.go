package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"sigs.k8s.io/yaml"

	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/internal/logging"
	"github.com/fleetsaga/fleetsaga/internal/urlfile"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// runStack is one run's share of the stack: its own ledger database, a
// fresh in-memory Temporal dev server, a fresh fleetsim seeded with the
// run's fleet, and fresh worker processes (so CPU and peak RSS are the
// run's alone). PostgreSQL is shared by every run.
type runStack struct {
	b           *Bench
	name        string
	dir         string
	spec        *spec.Spec
	specPath    string
	ledgerDB    string
	ledgerURL   string
	temporal    *testsuite.DevServer
	temporalPID int
	client      client.Client
	fleetsim    *devstack.Proc
	fleetsimURL string
	workers     []*workerProc
}

type workerProc struct {
	identity string
	metrics  string // http://host:port/metrics
	proc     *devstack.Proc
}

func (w *workerProc) pid() int { return w.proc.Cmd.Process.Pid }

func (b *Bench) startRun(ctx context.Context, name string, s *spec.Spec) (_ *runStack, err error) {
	st := &runStack{b: b, name: name, dir: filepath.Join(b.cfg.Dir, "runs", name), spec: s}
	defer func() {
		if err != nil {
			st.stop()
		}
	}()
	if err := os.RemoveAll(st.dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(st.dir, 0o755); err != nil {
		return nil, err
	}
	raw, err := yaml.Marshal(s)
	if err != nil {
		return nil, err
	}
	st.specPath = filepath.Join(st.dir, "fleet.yaml")
	if err := os.WriteFile(st.specPath, raw, 0o644); err != nil {
		return nil, err
	}
	st.ledgerDB = "bench_" + strings.NewReplacer("-", "_", ".", "_").Replace(name)
	_ = devstack.DropDatabase(ctx, b.pg.URL, st.ledgerDB)
	if st.ledgerURL, err = devstack.CreateDatabase(ctx, b.pg.URL, st.ledgerDB); err != nil {
		return nil, err
	}

	tlog, err := os.Create(filepath.Join(st.dir, "temporal.log"))
	if err != nil {
		return nil, err
	}
	before := childPIDs()
	if st.temporal, err = devstack.StartTemporal(ctx, devstack.TemporalOptions{Output: tlog}, b.log.Level(zerolog.WarnLevel)); err != nil {
		return nil, err
	}
	st.temporalPID = newChild(before, "temporal")
	if st.client, err = client.Dial(client.Options{
		HostPort: st.temporal.FrontendHostPort(), Namespace: "default",
		Logger: logging.Temporal(b.log.Level(zerolog.WarnLevel)),
	}); err != nil {
		return nil, fmt.Errorf("dial Temporal: %w", err)
	}
	if err := st.startFleetsim(ctx); err != nil {
		return nil, err
	}
	for i := range b.cfg.Workers {
		w, err := st.startWorker(ctx, i)
		if err != nil {
			return nil, err
		}
		st.workers = append(st.workers, w)
	}
	if err := st.waitPollers(ctx, len(st.workers)); err != nil {
		return nil, err
	}
	return st, nil
}

// startFleetsim starts (or restarts, with the same spec: every device back
// at its starting version) the run's fleetsim.
func (st *runStack) startFleetsim(ctx context.Context) error {
	if st.fleetsim != nil {
		_ = st.fleetsim.Terminate(5 * time.Second)
		st.fleetsim = nil
	}
	// No --database-url: the Nexus simulation (which polls PostgreSQL) is
	// off, so the ledger's statement counts are the workers' alone.
	var err error
	st.fleetsim, st.fleetsimURL, err = devstack.StartFleetsim(ctx, st.dir, nil, filepath.Join(st.b.cfg.BinDir, "fleetsim"),
		"--spec", st.specPath, "--database-url=", "--log-level", "warn")
	if err != nil {
		return err
	}
	return nil
}

// endpoints are direct mode's: the benchmark's racks have no Nexus
// (spDriver.spec turns the owners off).
func (st *runStack) endpoints() fleet.Endpoints {
	e := fleet.FromFleetsim(st.fleetsimURL, "")
	e.DirectMode = true
	return e
}

func (st *runStack) startWorker(ctx context.Context, i int) (*workerProc, error) {
	w := &workerProc{identity: fmt.Sprintf("bench-worker-%d", i)}
	env := []string{
		"DATABASE_URL=" + st.ledgerURL,
		"TEMPORAL_ADDRESS=" + st.temporal.FrontendHostPort(),
		"TEMPORAL_NAMESPACE=default",
		"FLEETSAGA_TASK_QUEUE=" + workflows.TaskQueue,
		"FLEETSIM_URL=" + st.fleetsimURL,
		"NEXUS_DATABASE_URL=",
		"FLEETSAGA_DIRECT_MODE=true", // the benchmark's racks have no Nexus
	}
	// The worker binds its metrics port itself and says which it got.
	urlPath := filepath.Join(st.dir, fmt.Sprintf("worker-%d.metrics-url", i))
	if err := os.Remove(urlPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	logPath := filepath.Join(st.dir, fmt.Sprintf("worker-%d.log", i))
	artifacts, err := st.b.cfg.artifactRoot()
	if err != nil {
		return nil, err
	}
	w.proc, err = devstack.StartProc(logPath, env, filepath.Join(st.b.cfg.BinDir, "worker"), "--identity", w.identity,
		"--artifact-root", artifacts, "--metrics-listen", "127.0.0.1:0", "--metrics-url-file", urlPath,
		"--log-format", "json", "--log-level", st.b.cfg.WorkerLogLevel)
	if err != nil {
		return nil, err
	}
	exited := func() error {
		if w.proc.Exited() {
			return fmt.Errorf("worker %s exited as it started (see %s)", w.identity, logPath)
		}
		return nil
	}
	if w.metrics, err = urlfile.Wait(ctx, urlPath, workerStartTimeout, exited); err != nil {
		_ = w.proc.Kill()
		return nil, err
	}
	return w, nil
}

// workerStartTimeout bounds a worker's start up to serving its metrics: it
// opens the ledger (migrations on a fresh database) before it listens.
const workerStartTimeout = 60 * time.Second

// waitPollers waits until n workers poll both the workflow and the
// activity task queue.
func (st *runStack) waitPollers(ctx context.Context, n int) error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		ok := true
		for _, typ := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
			resp, err := st.client.DescribeTaskQueue(ctx, workflows.TaskQueue, typ)
			if err != nil || len(resp.GetPollers()) < n {
				ok = false
			}
		}
		if ok {
			return nil
		}
		for i, w := range st.workers {
			if w.proc.Cmd.ProcessState != nil {
				return fmt.Errorf("worker %d exited (see %s)", i, filepath.Join(st.dir, fmt.Sprintf("worker-%d.log", i)))
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("workers did not start polling within 90s (see %s)", st.dir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// stopWorkers stops the workers gracefully.
func (st *runStack) stopWorkers() {
	for _, w := range st.workers {
		if w.proc != nil {
			_ = w.proc.Terminate(20 * time.Second)
		}
	}
	st.workers = nil
}

func (st *runStack) stop() {
	st.stopWorkers()
	if st.fleetsim != nil {
		_ = st.fleetsim.Terminate(5 * time.Second)
	}
	if st.client != nil {
		st.client.Close()
	}
	if st.temporal != nil {
		_ = st.temporal.Stop()
	}
	if st.ledgerDB != "" && !st.b.cfg.KeepDatabases {
		_ = devstack.DropDatabase(context.Background(), st.b.pg.URL, st.ledgerDB)
	}
}

// childPIDs lists this process's direct children now.
func childPIDs() map[int]bool {
	out := map[int]bool{}
	self := os.Getpid()
	entries, _ := filepath.Glob("/proc/[0-9]*")
	for _, e := range entries {
		n, err := strconv.Atoi(filepath.Base(e))
		if err != nil {
			continue
		}
		if p, err := readProcCPU(n); err == nil && p.PPid == self {
			out[n] = true
		}
	}
	return out
}

// newChild finds a child started since before whose command name starts
// with prefix (0 when there is none).
func newChild(before map[int]bool, prefix string) int {
	for pid := range childPIDs() {
		if before[pid] {
			continue
		}
		if p, err := readProcCPU(pid); err == nil && strings.HasPrefix(p.Comm, prefix) {
			return pid
		}
	}
	return 0
}
