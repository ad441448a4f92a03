// Package chaos attacks the real fleetsaga stack while it runs a rollout and
// then proves nothing was lost or done twice.
//
// Run starts the embedded stack (a private PostgreSQL, the pinned Temporal
// dev server on a persistent database file, or with Config.Temporal the real
// server on that PostgreSQL; fleetsim, worker processes),
// starts one rollout plan with a stage for every update kind registered in
// kinds.Kinds, and meanwhile SIGKILLs random workers (restarting them),
// restarts PostgreSQL and the Temporal server, and arms random fleetsim
// faults. Everything random follows the seed, which is printed so a failure
// can be replayed. At the end it checks invariants against fleetsim's truth
// (GET /truth), the ledger and Temporal, and reports the violations of each.
//
// `make chaos` runs the full size (chaos/cmd/chaos); a short variant runs
// in `make test` (TestChaosShort).
package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/internal/logging"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Config sizes and paces one chaos run.
type Config struct {
	// Seed drives the fleet, the plan, the faults and the chaos schedule.
	Seed int64
	// Dir holds the run's state and logs; it is wiped at the start and
	// kept afterwards for a post-mortem.
	Dir string
	// BinDir holds the built worker and fleetsim binaries.
	BinDir string
	// Workers is the number of worker processes.
	Workers int

	// Fleet and plan size.
	Sleds, SPUpdates, HostUpdates, Zones, Servers, Clusters int
	// NoOwners turns off the rack's and clusters' other owners in fleetsim
	// (Nexus's lockstep API, executor and MGS driver; the MCO),
	// which are on by default as on a real rack and cluster.
	NoOwners bool
	// Concurrency of each rollout stage.
	Concurrency int
	// SpeedUp divides the device timings.
	SpeedUp float64

	// Kills is the minimum number of worker SIGKILLs; the harness keeps
	// killing every KillGap (random within) until the rollout ends.
	Kills   int
	KillGap [2]time.Duration
	// GracefulRestarts is the minimum number of workers restarted with
	// SIGTERM (in turn, one at a time, every GracefulGap) until the
	// rollout ends (attack_graceful.go).
	GracefulRestarts int
	GracefulGap      [2]time.Duration
	// RestartPostgres and RestartTemporal restart each once mid-run.
	RestartPostgres, RestartTemporal bool
	// APIFaults is how many API-level faults (mgs_down, latency,
	// error_rate) are armed during the run, on top of the device faults
	// armed on seeded targets before it starts.
	APIFaults int

	// Blind-spot attacks. Cancels and TerminateRestarts
	// are how many running children (at most one per kind) are cancelled,
	// or terminated and started again under the same ID and input;
	// DuplicateStarts runs the real starter twice at once for one extra
	// zone expunge; NexusExpunges Nexus zones (never the last) are expunged
	// concurrently in the plan.
	Cancels, TerminateRestarts int
	DuplicateStarts            bool
	NexusExpunges              int
	// NoCancel are kinds whose children are never cancelled (a known
	// product gap the short run leaves to the full one).
	NoCancel map[workflows.Kind]bool
	// NewBuild runs the workers as a Worker Deployment version and deploys
	// a new build during a seeded stage.
	NewBuild bool
	// Resets is how many running children, mid-update, are
	// reset (to their first workflow task, their last, or a random one, in
	// turn) at seeded stages; PGBlips how many PostgreSQL blips land while
	// SP firmware or host flash starts are in flight.
	Resets, PGBlips int
	// ResetsFirstStage puts every reset in the first stage (SP firmware:
	// the longest updates, several at once), where a short run's resets
	// are sure to find children mid-update; later stages' children can end
	// between two ticks.
	ResetsFirstStage bool

	// Timeout bounds the rollout; Settle bounds the wait for everything
	// to end afterwards.
	Timeout time.Duration
	Settle  time.Duration
	// UIPort serves the Temporal Web UI (0 = none).
	UIPort int
	// Temporal is the stack's Temporal: devstack.TemporalDev (default) or
	// devstack.TemporalCluster (the real server on the private PostgreSQL,
	// so the PostgreSQL restart hits Temporal's persistence too).
	Temporal string

	Log zerolog.Logger
	// Out receives the progress lines and the final table (nil = discard).
	Out io.Writer
}

// Full is the `make chaos` size: at least 200 targets over every kind.
func Full(seed int64) Config {
	return Config{
		Seed: seed, Workers: 3,
		Sleds: 64, SPUpdates: 48, HostUpdates: 32, Zones: 36, Servers: 80, Clusters: 4,
		Concurrency: 8, SpeedUp: 40,
		Kills: 12, KillGap: [2]time.Duration{3 * time.Second, 9 * time.Second},
		GracefulRestarts: 4, GracefulGap: [2]time.Duration{15 * time.Second, 40 * time.Second},
		RestartPostgres: true, RestartTemporal: true, APIFaults: 16,
		Cancels: 6, TerminateRestarts: 3, DuplicateStarts: true, NexusExpunges: 2, NewBuild: true,
		// Every stage gets a reset to each of the three points.
		Resets: 18, PGBlips: 2,
		Timeout: 30 * time.Minute, Settle: 3 * time.Minute,
	}
}

// Short is the variant `make test` runs: every kind, every kind of chaos,
// a few targets each.
func Short(seed int64) Config {
	return Config{
		Seed: seed, Workers: 3,
		Sleds: 5, SPUpdates: 4, HostUpdates: 2, Zones: 2, Servers: 6, Clusters: 2,
		Concurrency: 4, SpeedUp: 80,
		Kills: 3, KillGap: [2]time.Duration{4 * time.Second, 8 * time.Second},
		GracefulRestarts: 1, GracefulGap: [2]time.Duration{5 * time.Second, 10 * time.Second},
		RestartPostgres: true, RestartTemporal: true, APIFaults: 3,
		Cancels: 1, TerminateRestarts: 1, DuplicateStarts: true, NexusExpunges: 2, NewBuild: true,
		// One reset to each point, one blip (its MGS kind: whichever
		// starts first).
		Resets: 3, PGBlips: 1, ResetsFirstStage: true,
		// Every kind is cancelled (chaos/README.md: the known cancel gaps
		// are fixed).
		Timeout: 2 * time.Minute, Settle: 2 * time.Minute,
	}
}

func (c Config) validate() error {
	switch {
	case c.Dir == "" || c.BinDir == "":
		return errors.New("chaos: Dir and BinDir are required")
	case c.Workers < 2:
		return errors.New("chaos: at least 2 workers (one is killed at a time)")
	case c.Concurrency < 1 || c.SpeedUp <= 0:
		return errors.New("chaos: concurrency >= 1 and speed-up > 0 required")
	case c.KillGap[0] <= 0 || c.KillGap[1] < c.KillGap[0]:
		return errors.New("chaos: kill gap must be positive and ordered")
	case c.GracefulRestarts > 0 && (c.GracefulGap[0] <= 0 || c.GracefulGap[1] < c.GracefulGap[0]):
		return errors.New("chaos: graceful restart gap must be positive and ordered")
	case c.Timeout <= 0:
		return errors.New("chaos: timeout must be positive")
	}
	return nil
}

// Run runs one chaos run and returns its report. An error means the run
// could not be carried out; violations are in the report (Report.OK).
//
// Run needs a PostgreSQL it can restart: it ignores DATABASE_URL (unsets
// it in this process) and starts a private cluster in Dir.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	log := cfg.Log
	if err := os.RemoveAll(cfg.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	// The private cluster runs as the postgres user when we are root.
	_ = os.Chmod(cfg.Dir, 0o755)
	fl, err := newFleet(cfg, cfg.Dir)
	if err != nil {
		return nil, err
	}
	plan, devFaults, expect, err := buildPlan(cfg, fl)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "chaos: seed %d (replay: make chaos SEED=%d); %d targets in %d updates over %d stages; state in %s\n",
		cfg.Seed, cfg.Seed, expect.totalTargets(), expect.updates, len(plan.Stages), cfg.Dir)

	if os.Getenv("DATABASE_URL") != "" {
		log.Info().Msg("ignoring DATABASE_URL: chaos restarts PostgreSQL, so it runs a private cluster")
		_ = os.Unsetenv("DATABASE_URL")
	}
	var version devstack.WorkerVersion
	if cfg.NewBuild {
		version = firstBuild
	}
	var workerEnv []string
	if cfg.NoOwners {
		workerEnv = []string{"FLEETSAGA_DIRECT_MODE=true"} // the racks have no Nexus
	}
	stack, err := devstack.StartStack(ctx, devstack.StackOptions{
		Dir: cfg.Dir, BinDir: cfg.BinDir, UIPort: cfg.UIPort, FleetsimSpec: fl.specPath,
		Workers: cfg.Workers, WorkerVersion: version, PersistTemporal: true, Database: "fleetsaga", Temporal: cfg.Temporal,
		WorkerEnv: workerEnv,
	}, log)
	if err != nil {
		return nil, fmt.Errorf("start the stack: %w", err)
	}
	defer stack.Stop()
	if !stack.PG.Private && cfg.RestartPostgres {
		return nil, errors.New("chaos: PostgreSQL is not a private cluster, so it cannot be restarted")
	}
	c, err := client.Dial(client.Options{HostPort: stack.Temporal.FrontendHostPort(), Namespace: "default",
		Logger: logging.Temporal(log.Level(zerolog.ErrorLevel))})
	if err != nil {
		return nil, fmt.Errorf("dial Temporal: %w", err)
	}
	defer c.Close()
	if stack.UIURL != "" {
		fmt.Fprintf(out, "chaos: Temporal Web UI %s\n", stack.UIURL)
	}

	obs := &observer{sim: stack.FleetsimURL, dbURL: stack.DatabaseURL, c: c}
	before, err := obs.truth(ctx)
	if err != nil {
		return nil, fmt.Errorf("read fleetsim truth: %w", err)
	}
	h := &harness{cfg: cfg, stack: stack, c: c, obs: obs, out: out, log: log,
		rng: rand.New(rand.NewSource(cfg.Seed + 1)), rep: newReport(cfg, expect), rolloutID: rollout.RolloutWorkflowID(plan.Name),
		faultIDs: map[int]faults.Kind{}, withdrawn: map[int]bool{}}
	for _, st := range plan.Stages {
		h.stages = append(h.stages, st.Name)
		h.stageKind = append(h.stageKind, st.Kind)
	}
	h.brng = rand.New(rand.NewSource(cfg.Seed + 2))
	h.grng = rand.New(rand.NewSource(cfg.Seed + 3))
	h.stopping = -1
	h.planBlind()
	for _, r := range h.blind.resets {
		h.rep.ResetsPlanned[string(r.point)]++
	}
	h.newBuild = &newBuildState{stage: -1}
	if cfg.NewBuild {
		if err := h.setCurrentBuild(ctx, firstBuild); err != nil {
			return nil, err
		}
		h.newBuild.stage = h.restartStage()
	}
	for _, f := range devFaults {
		if err := h.armFault(ctx, f); err != nil {
			return nil, err
		}
	}

	started := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	run, err := c.ExecuteWorkflow(runCtx, client.StartWorkflowOptions{
		ID: rollout.RolloutWorkflowID(plan.Name), TaskQueue: workflows.TaskQueue,
		TypedSearchAttributes: workflows.StartAttributes(workflows.KindRollout, "plan/"+plan.Name, ""),
		StaticSummary:         fmt.Sprintf("chaos rollout, seed %d", cfg.Seed),
	}, rollout.Rollout, plan)
	if err != nil {
		return nil, fmt.Errorf("start the rollout: %w", err)
	}
	fmt.Fprintf(out, "chaos: rollout %s started\n", run.GetID())

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(5)
	h.started = started
	go func() { defer wg.Done(); h.supervise(runCtx, done) }()
	go func() { defer wg.Done(); h.attack(runCtx, done) }()
	go func() { defer wg.Done(); h.gracefulRestarts(runCtx, done) }()
	go func() { defer wg.Done(); h.attackChildren(runCtx, done) }()
	go func() { defer wg.Done(); h.blipWatch(runCtx, done) }()
	status := h.awaitClosed(runCtx, run.GetID())
	close(done)
	wg.Wait()
	if status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		fmt.Fprintf(out, "chaos: the rollout is still running after %s; chaos stops, %s more to finish\n", cfg.Timeout, cfg.Settle)
	}

	// Everything must settle by itself (no more chaos); then look.
	settleCtx, cancelSettle := context.WithTimeout(ctx, cfg.Settle)
	defer cancelSettle()
	if status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		status = h.awaitClosed(settleCtx, run.GetID())
	}
	h.rep.Duration = time.Since(started)
	h.rep.RolloutStatus = status
	fmt.Fprintf(out, "chaos: rollout ended %s after %s\n", strings.ToLower(strings.TrimPrefix(status.String(), "WORKFLOW_EXECUTION_STATUS_")),
		h.rep.Duration.Round(time.Second))
	h.settle(settleCtx, fl)
	collectCtx, cancelCollect := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancelCollect()
	if err := h.check(collectCtx, run.GetID(), fl, before); err != nil {
		return h.rep, fmt.Errorf("collect the results: %w", err)
	}
	h.rep.print(out)
	return h.rep, nil
}

// awaitClosed waits (through Temporal restarts) until the workflow closes
// or ctx ends, and returns its status.
func (h *harness) awaitClosed(ctx context.Context, id string) enumspb.WorkflowExecutionStatus {
	lastProgress := time.Now()
	for {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		desc, err := h.c.DescribeWorkflowExecution(dctx, id, "")
		cancel()
		if err == nil {
			if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				return st
			}
			if time.Since(lastProgress) > 15*time.Second {
				lastProgress = time.Now()
				h.printProgress(ctx, id)
			}
		}
		select {
		case <-ctx.Done():
			return enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
		case <-time.After(time.Second):
		}
	}
}

func (h *harness) printProgress(ctx context.Context, id string) {
	p, err := h.progress(ctx, id)
	if err != nil {
		return
	}
	h.mu.Lock()
	kills, faults := h.rep.Kills, h.rep.FaultsArmed
	h.mu.Unlock()
	fmt.Fprintf(h.out, "chaos: %4ds %s: %d/%d updates done, %d running, %d failed; %d kills, %d faults so far\n",
		int(time.Since(h.started).Seconds()), p.Phase, p.Done, p.Total, p.Counts["running"], p.Counts["failed"], kills, faults)
}

func (h *harness) progress(ctx context.Context, id string) (workflows.Progress, error) {
	var p workflows.Progress
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := h.c.QueryWorkflow(qctx, id, "", workflows.ProgressQuery)
	if err != nil {
		return p, err
	}
	return p, v.Get(&p)
}

// settle waits until no workflow runs and no ledger attempt is active
// (the rollout's children end with it), then a few Nexus claim rounds so
// moved sagas get adopted.
func (h *harness) settle(ctx context.Context, fl *fleet) {
	for ctx.Err() == nil {
		running, err1 := h.obs.runningWorkflows(ctx)
		active, err2 := h.obs.activeAttempts(ctx)
		if err1 == nil && err2 == nil && running == 0 && active == 0 {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	claim := time.Duration(float64(fl.spec.Timings.NexusClaimInterval.Duration) / fl.spec.SpeedUp)
	select {
	case <-ctx.Done():
	case <-time.After(4*claim + time.Second):
	}
}

// check collects everything and evaluates the invariants into the report.
func (h *harness) check(ctx context.Context, rolloutID string, fl *fleet, before *truth) error {
	after, err := h.obs.truth(ctx)
	if err != nil {
		return err
	}
	attempts, err := h.obs.attempts(ctx)
	if err != nil {
		return err
	}
	sagas, err := h.obs.sagas(ctx)
	if err != nil {
		return err
	}
	expunged, err := h.obs.expungedZones(ctx)
	if err != nil {
		return err
	}
	wfs, err := h.obs.workflows(ctx)
	if err != nil {
		return err
	}
	left, err := h.obs.armedFaults(ctx)
	if err != nil {
		return err
	}
	in := &evidence{terminated: h.blind.terminated, restarts: h.restartOutcomes(ctx), dup: h.blind.dup, fleet: fl, expect: h.rep.expect, before: before, after: after, attempts: attempts,
		sagas: sagas, expunged: expunged, workflows: wfs, rolloutID: rolloutID, rolloutStatus: h.rep.RolloutStatus,
		newBuildAt: h.newBuild.at, resetRuns: h.blind.resetRuns, blocked: h.blocked}
	h.rep.fill(in, armedFaults{ids: h.faultIDs, withdrawn: h.withdrawn, left: left})
	return nil
}
