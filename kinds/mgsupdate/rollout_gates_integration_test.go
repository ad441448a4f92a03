package mgsupdate_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/health"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// newPromStack is newMGSStack with a real Prometheus (Debian's) scraping
// fleetsim's device health, and a worker whose health checks query it
// and which notifies hooks.
func newPromStack(t *testing.T, hooks ...rollout.Webhook) *mgsStack {
	return newMonitoredStack(t, hooks...).mgsStack
}

// monitoredStack is newPromStack's stack with what a test that stops
// parts of it needs: the worker's stop and deps (to start another), and
// a switch that makes Prometheus unreachable for the worker (an outage
// of the monitor, which the operator later fixes).
type monitoredStack struct {
	*mgsStack
	deps        workerapp.Deps
	stopWorker  func()
	monitorDown atomic.Bool
}

func newMonitoredStack(t *testing.T, hooks ...rollout.Webhook) *monitoredStack {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim + Prometheus")
	}
	s := &spec.Spec{Seed: 21, SpeedUp: 100, Timings: spec.DefaultTimings()}
	s.Timings.FlashBytesPerSecond = 10 << 10
	s.Timings.Phase2BytesPerSecond = 5 << 10
	s.Timings.SPResetTime = spec.Duration{Duration: 20 * time.Second}
	s.Timings.HostBootTime = spec.Duration{Duration: 10 * time.Second}
	s.Racks = spec.GenerateRacks(4, 21)
	require.NoError(t, s.Validate())
	env := testenv.Parallel(t)
	st := &monitoredStack{mgsStack: &mgsStack{t: t, env: env, spec: s, dir: t.TempDir()}}
	st.sim = env.StartFleetsim(s)
	p, promURL, err := devstack.StartPrometheus(context.Background(), t.TempDir(), map[string]string{"fleetsim": st.sim.URL})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Kill() })
	st.deps = workerapp.Deps{Fleet: fleet.FromFleetsim(contractProxy(t, st.sim.URL, 2*len(s.Racks)), env.DatabaseURL), Webhooks: hooks}
	st.deps.Fleet.Prometheus = st.monitorProxy(promURL)
	st.deps.Fleet.NexusExternalTokenFile = env.NexusTokenFile()
	st.stopWorker = env.StartWorker(st.deps)
	return st
}

// monitorProxy is Prometheus as the worker reaches it: 503 while
// monitorDown is set.
func (st *monitoredStack) monitorProxy(promURL string) string {
	target, err := url.Parse(promURL)
	require.NoError(st.t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st.monitorDown.Load() {
			http.Error(w, "monitor down", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	st.t.Cleanup(srv.Close)
	return srv.URL
}

// spGate is a gate on every SP's health as fleetsim reports it.
func spGate(query string) *rollout.HealthGate {
	return &rollout.HealthGate{Bake: 3 * time.Second, Interval: time.Second, FailuresToAbort: 2, InconclusiveToPause: 2,
		Checks: []rollout.HealthCheck{{Name: "sps-healthy", Query: query, Pass: "== 1"}}}
}

func (st *mgsStack) spStage(name, version string, cubbies ...int) rollout.Stage {
	var ups []rollout.PlanUpdate
	for _, c := range cubbies {
		in := st.spInput(c, version)
		ups = append(ups, planUpdateOf(st.t, &in))
	}
	return rollout.Stage{Name: name, Kind: workflows.KindSPFirmware, Concurrency: 3, Updates: ups,
		Ramp: &rollout.Ramp{Start: 1, Factor: 2}, Health: spGate(`fleetsim_device_healthy{kind="sp"}`)}
}

func (st *mgsStack) startRollout(in rollout.RolloutInput) client.WorkflowRun {
	st.t.Helper()
	run, err := st.env.Client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: rollout.RolloutWorkflowID(in.Name), TaskQueue: st.env.TaskQueue}, rollout.Rollout, in)
	require.NoError(st.t, err)
	return run
}

func (st *mgsStack) explain(id string) rollout.Explanation {
	st.t.Helper()
	v, err := st.env.Client.QueryWorkflow(context.Background(), id, "", rollout.ExplainQuery)
	require.NoError(st.t, err)
	var e rollout.Explanation
	require.NoError(st.t, v.Get(&e))
	return e
}

// On a real Prometheus scraping fleetsim: a release that leaves its SPs
// healthy passes the gate; a bad one (fleetsim's bad_version fault) makes
// the first SP of the next rollout unhealthy, its gate fails and the
// rollout aborts before the version spreads: the other SPs keep what
// they ran, and the reason (the failing series) is in the ledger and the
// explain answer.
func TestHealthGateAbortsBeforeABadVersionSpreads(t *testing.T) {
	st := newPromStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before := st.truth(3).SP.Active.Version

	good := st.startRollout(rollout.RolloutInput{Name: "good-" + st.env.TaskQueue, Stages: []rollout.Stage{st.spStage("canary", "1.1.0", 0)}})
	gctx, gcancel := context.WithTimeout(ctx, time.Minute)
	defer gcancel()
	if err := good.Get(gctx, nil); err != nil {
		t.Fatalf("a healthy release passes its gate: %v; %+v", err, st.explain(good.GetID()))
	}
	require.Equal(t, "1.1.0", st.truth(0).SP.Active.Version)

	st.arm(faults.Fault{Kind: faults.BadVersion, Target: "*", Version: "1.2.0"})
	bad := st.startRollout(rollout.RolloutInput{Name: "bad-" + st.env.TaskQueue, Stages: []rollout.Stage{st.spStage("sps", "1.2.0", 1, 2, 3)}})
	err := bad.Get(ctx, nil)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	require.Equal(t, failure.HealthGateFailed, app.Type())
	require.Equal(t, "1.2.0", st.truth(1).SP.Active.Version, "the first batch ran")
	for _, c := range []int{2, 3} {
		require.Equal(t, before, st.truth(c).SP.Active.Version, "sled %d untouched: the bad version did not spread", c)
	}
	events, err := st.env.Store.RolloutEvents(ctx, bad.GetID())
	require.NoError(t, err)
	last := events[len(events)-1]
	require.Equal(t, "aborted", last.Kind)
	require.Contains(t, last.Reason, `target="sp/sled/1"`)
	e := st.explain(bad.GetID())
	require.Equal(t, rollout.WaitStopped, e.Waiting)
	require.Contains(t, e.Reason, "health gate failed after batch 1")
	require.Equal(t, health.Fail, e.Gate.Verdict)

	out := st.starter("explain", bad.GetID())
	require.Contains(t, out, "the rollout stopped itself in stage sps: health gate failed after batch 1")
	require.Contains(t, out, `target="sp/sled/1"`)
	out = st.starter("status", bad.GetID())
	require.Contains(t, out, "why: the rollout stopped itself in stage sps")
	require.Contains(t, out, "health gate, stage sps batch 1")
}

// starter runs the real starter binary against the test's stack and
// returns its output (it must exit 0).
func (st *mgsStack) starter(args ...string) string {
	st.t.Helper()
	out, code := st.starterExit(args...)
	require.Zero(st.t, code, out)
	return out
}

// A query that matches nothing is inconclusive; twice pauses the
// rollout (state paused, the reason in the ledger and the explain
// answer) until an operator resumes it.
func TestInconclusiveGatePausesTheRollout(t *testing.T) {
	st := newPromStack(t)
	stage := st.spStage("sps", "1.1.0", 0, 1)
	stage.Health = spGate(`fleetsim_device_healthy{kind="no-such-kind"}`)
	run := st.startRollout(rollout.RolloutInput{Name: "inconclusive-" + st.env.TaskQueue, Stages: []rollout.Stage{stage}})
	defer func() { _ = st.env.Client.CancelWorkflow(context.Background(), run.GetID(), "") }()
	require.Eventually(t, func() bool { return st.explain(run.GetID()).Waiting == rollout.WaitPaused }, time.Minute, 250*time.Millisecond)
	e := st.explain(run.GetID())
	require.Contains(t, e.Reason, "health gate inconclusive 2 times after batch 1")
	require.Contains(t, e.Reason, "no data")
	desc, err := st.env.Client.DescribeWorkflowExecution(context.Background(), run.GetID(), "")
	require.NoError(t, err)
	sa := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	require.Contains(t, string(sa[workflows.SAState.GetName()].GetData()), string(workflows.StatePaused))
	events, err := st.env.Store.RolloutEvents(context.Background(), run.GetID())
	require.NoError(t, err)
	require.Equal(t, "paused", events[len(events)-1].Kind)
	require.Equal(t, "1.1.0", st.truth(0).SP.Active.Version)
	require.NotEqual(t, "1.1.0", st.truth(1).SP.Active.Version, "the second batch waits for the gate")
	out := st.starter("explain", run.GetID())
	require.Contains(t, out, "paused (for ")
	require.Contains(t, out, "sps-healthy: inconclusive no data")
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/rollout-gates-inconclusive-pause.json")
}

// A gate with no bake judges its first round the moment the batch ends.
// Prometheus then still holds what it scraped before the batch's SP took
// the bad release; a round that judged that would pass the batch and let
// the release spread. The round must judge only data scraped after the
// batch ended: it fails, the rollout aborts after batch 1, and sleds 2
// and 3 keep what they ran (fleetsim's truth).
func TestUnbakedGateJudgesOnlyDataScrapedAfterTheBatch(t *testing.T) {
	st := newPromStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before := st.truth(2).SP.Active.Version
	st.arm(faults.Fault{Kind: faults.BadVersion, Target: "*", Version: "1.2.0"})
	stage := st.spStage("sps", "1.2.0", 1, 2, 3)
	stage.Health.Bake, stage.Health.FailuresToAbort = 0, 1
	run := st.startRollout(rollout.RolloutInput{Name: "unbaked-" + st.env.TaskQueue, Stages: []rollout.Stage{stage}})
	err := run.Get(ctx, nil)

	events := st.rolloutEvents(run.GetID())
	var rounds []ledger.RolloutEvent
	for _, e := range events {
		if e.Kind == "gate-round" || e.Kind == "gate-passed" {
			rounds = append(rounds, e)
		}
	}
	require.NotEmpty(t, rounds, "%+v", events)
	require.Equal(t, "gate-round", rounds[0].Kind, "batch 1's first round must not pass the gate: %+v", rounds[0])
	require.Equal(t, "fail", rounds[0].Verdict, "batch 1 round 1 judged the bad release: %+v", rounds[0])
	require.True(t, strings.HasPrefix(rounds[0].Reason, "batch 1 round 1: "), "%+v", rounds[0])
	require.Contains(t, rounds[0].Reason, `target="sp/sled/1"`)
	requireGateFailed(t, err)
	require.Equal(t, "1.2.0", st.truth(1).SP.Active.Version, "the first batch ran")
	for _, c := range []int{2, 3} {
		require.Equal(t, before, st.truth(c).SP.Active.Version, "sled %d untouched: the bad version did not spread", c)
		require.Empty(t, st.truth(c).Deliveries, "sled %d got no image", c)
	}
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/rollout-gates-unbaked-fresh-data.json")
}
