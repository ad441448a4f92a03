package rollout_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/schedule"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// startGatesWorker runs a worker with the rollout, the test kind and the
// activities a gated rollout calls (health checks, notifications to
// hooks) on the test's task queue.
func startGatesWorker(t *testing.T, env *testenv.Env, hooks ...rollout.Webhook) {
	t.Helper()
	noKeyring, err := approval.LoadKeyring(approval.KeyringConfig{})
	require.NoError(t, err)
	w := worker.New(env.Client, env.TaskQueue, worker.Options{})
	w.RegisterWorkflow(rollout.Rollout)
	w.RegisterWorkflow(rollout.TestUpdate)
	w.RegisterActivity(&rollout.RolloutActivities{Store: env.Store})
	w.RegisterActivity(&activities.ApprovalActivities{Store: env.Store, Keyring: noKeyring})
	w.RegisterActivity(&rollout.HealthActivities{HTTP: http.DefaultClient, AllowedHosts: []string{"127.0.0.1"}})
	w.RegisterActivity(&rollout.NotifyActivities{Webhooks: hooks, HTTP: http.DefaultClient})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
}

// healthyEndpoint is an HTTP health check that passes.
func healthyEndpoint(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	t.Cleanup(srv.Close)
	return srv.URL
}

func startRollout(t *testing.T, env *testenv.Env, in rollout.RolloutInput) client.WorkflowRun {
	t.Helper()
	run, err := env.Client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: rollout.RolloutWorkflowID(in.Name), TaskQueue: env.TaskQueue}, rollout.Rollout, in)
	require.NoError(t, err)
	return run
}

// childSpan is when one update ran, as Temporal recorded it.
type childSpan struct {
	target     string
	start, end time.Time
}

// childSpans are the test updates' runs, by start; a target never started
// is absent.
func childSpans(t *testing.T, env *testenv.Env, names ...string) []childSpan {
	t.Helper()
	var out []childSpan
	for _, n := range names {
		d, err := env.Client.DescribeWorkflowExecution(context.Background(), workflows.WorkflowID(rollout.KindTest, "test/"+n), "")
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			continue
		}
		require.NoError(t, err)
		info := d.GetWorkflowExecutionInfo()
		s := childSpan{target: n, start: info.GetStartTime().AsTime()}
		if info.GetCloseTime() != nil {
			s.end = info.GetCloseTime().AsTime()
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out
}

// batches groups spans into the batches they ran in: a batch starts when
// an update starts after every earlier one ended.
func batches(spans []childSpan) [][]string {
	var out [][]string
	var lastEnd time.Time
	for _, s := range spans {
		if len(out) == 0 || s.start.After(lastEnd) {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], s.target[strings.LastIndex(s.target, "-")+1:])
		if s.end.After(lastEnd) {
			lastEnd = s.end
		}
	}
	for _, b := range out {
		sort.Strings(b)
	}
	return out
}

func explainOf(t *testing.T, env *testenv.Env, id string) rollout.Explanation {
	t.Helper()
	v, err := env.Client.QueryWorkflow(context.Background(), id, "", rollout.ExplainQuery)
	require.NoError(t, err)
	var e rollout.Explanation
	require.NoError(t, v.Get(&e))
	return e
}

func historyEvents(t *testing.T, env *testenv.Env, id string) int {
	t.Helper()
	it := env.Client.GetWorkflowHistory(context.Background(), id, "", false, 0)
	n := 0
	for it.HasNext() {
		_, err := it.Next()
		require.NoError(t, err)
		n++
	}
	return n
}

// namer makes test update names unique to a test (workflow IDs are the
// dev server's, shared by every test).
type namer string

func (n namer) test(name string, take time.Duration, failType string) rollout.TestInput {
	return rollout.TestInput{Name: string(n) + name, Take: take, FailType: failType}
}

func (n namer) all(names ...string) []string {
	out := make([]string, len(names))
	for i, x := range names {
		out[i] = string(n) + x
	}
	return out
}

func namerOf(env *testenv.Env) namer { return namer(env.TaskQueue + "-") }

// A ramped stage with a gate grows its batch only after a healthy batch:
// 1, then 2 (one failed: the next stays 2), then 2, then 4. Both the
// gated run's and a plain run's histories are measured.
func TestGatedRolloutRampGrowsOnlyAfterHealthyBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	startGatesWorker(t, env)
	nm := namerOf(env)
	letters := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}
	names := nm.all(letters...)
	var ups []rollout.TestInput
	for _, n := range letters {
		ft := ""
		if n == "c" {
			ft = failure.MGSRejected
		}
		ups = append(ups, nm.test(n, 2*time.Second, ft))
	}
	in := rollout.RolloutInput{Name: "ramp-" + env.TaskQueue, Stages: []rollout.Stage{{Name: "all", Kind: rollout.KindTest, Concurrency: 4, FailureBudget: 5,
		Updates: rollout.TestUpdates(ups...),
		Ramp:    &rollout.Ramp{Start: 1, Factor: 2},
		Health:  &rollout.HealthGate{Checks: []rollout.HealthCheck{{Name: "api", URL: healthyEndpoint(t)}}},
	}}}
	run := startRollout(t, env, in)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var res rollout.RolloutResult
	require.NoError(t, run.Get(ctx, &res))
	require.Equal(t, 1, res.Failed)
	require.Equal(t, [][]string{{"a"}, {"b", "c"}, {"d", "e"}, {"f", "g", "h", "i"}}, batches(childSpans(t, env, names...)))
	for _, o := range res.Outcomes {
		if o.Target == "test/"+string(nm)+"c" {
			require.Equal(t, rollout.ClassRefused, o.Class, "the failure's class comes from its type")
		}
	}
	events, err := env.Store.RolloutEvents(ctx, run.GetID())
	require.NoError(t, err)
	passed := 0
	for _, e := range events {
		if e.Kind == "gate-passed" {
			passed++
		}
	}
	require.Equal(t, 4, passed, "one gate after each batch, each in the ledger")
	gated := historyEvents(t, env, run.GetID())
	replay.Record(t, env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/rollout-gates-ramp.json")

	// The same plan without a gate or a ramp, for the measure.
	plain := in
	plain.Name = "plain-" + env.TaskQueue
	plain.Stages = []rollout.Stage{in.Stages[0]}
	plain.Stages[0].Ramp, plain.Stages[0].Health = nil, nil
	for i := range ups {
		ups[i].Name = "p" + ups[i].Name
	}
	plain.Stages[0].Updates = rollout.TestUpdates(ups...)
	prun := startRollout(t, env, plain)
	require.NoError(t, prun.Get(ctx, nil))
	t.Logf("history events of a 9-update rollout: %d plain, %d with a ramp and a gate after each of its 4 batches", historyEvents(t, env, prun.GetID()), gated)
}

// A failure class passing its percentage after the minimum aborts: the
// updates not yet started never start, the reason is in the ledger and
// the explain answer, and the rollout fails with the threshold's type.
func TestGatedRolloutAbortsAtFailureThreshold(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	startGatesWorker(t, env)
	nm := namerOf(env)
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var ups []rollout.TestInput
	for _, n := range names {
		ft := ""
		if n == "b" || n == "c" {
			ft = failure.MGSRejected
		}
		ups = append(ups, nm.test(n, time.Second, ft))
	}
	in := rollout.RolloutInput{Name: "threshold-" + env.TaskQueue, Stages: []rollout.Stage{
		{Name: "first", Kind: rollout.KindTest, Concurrency: 2, Updates: rollout.TestUpdates(ups...),
			Thresholds: []rollout.Threshold{{Class: rollout.ClassRefused, Percent: 30, Minimum: 3}}},
		{Name: "second", Kind: rollout.KindTest, Concurrency: 1, Updates: rollout.TestUpdates(nm.test("z", 0, ""))},
	}}
	run := startRollout(t, env, in)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := run.Get(ctx, nil)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	require.Equal(t, failure.FailureThreshold, app.Type())

	started := childSpans(t, env, nm.all(append(names, "z")...)...)
	require.LessOrEqual(t, len(started), 4, "at most the two batches of two before the threshold: %v", started)
	for _, s := range started {
		require.Contains(t, nm.all("a", "b", "c", "d"), s.target)
	}
	events, err := env.Store.RolloutEvents(ctx, run.GetID())
	require.NoError(t, err)
	require.NotEmpty(t, events)
	last := events[len(events)-1]
	require.Equal(t, "aborted", last.Kind)
	require.Contains(t, last.Reason, "failed with device-refused")
	e := explainOf(t, env, run.GetID())
	require.Equal(t, rollout.WaitStopped, e.Waiting)
	require.Contains(t, e.Reason, "over the threshold of 30%")
	replay.Record(t, env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/rollout-gates-threshold.json")
}

// A window that closes: updates start while one still fits before the
// close (the kind's time is 6 s), none after it, and the rollout then
// waits for the next window, saying so.
func TestWindowCloseStopsNewStartsAndNoneOverrunsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	rollout.SetTestDeviceTime(t, 6*time.Second)
	startGatesWorker(t, env)
	now := time.Now().UTC()
	opened := now.Truncate(time.Minute)
	closes := now.Add(16 * time.Second).Truncate(time.Second)
	nm := namerOf(env)
	letters := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	names := nm.all(letters...)
	var ups []rollout.TestInput
	for _, n := range letters {
		ups = append(ups, nm.test(n, 3*time.Second, ""))
	}
	in := rollout.RolloutInput{Name: "window-" + env.TaskQueue,
		Calendar: &rollout.Calendar{Calendar: schedule.Calendar{Windows: []schedule.Window{{
			Days: []string{strings.ToLower(now.Weekday().String()[:3])}, Start: opened.Format("15:04"), Duration: closes.Sub(opened)}}}},
		Stages: []rollout.Stage{{Name: "all", Kind: rollout.KindTest, Concurrency: 1, Updates: rollout.TestUpdates(ups...)}}}
	run := startRollout(t, env, in)
	defer func() { _ = env.Client.CancelWorkflow(context.Background(), run.GetID(), "") }()

	require.Eventually(t, func() bool {
		return explainOf(t, env, run.GetID()).Waiting == rollout.WaitWindow
	}, time.Minute, 250*time.Millisecond)
	e := explainOf(t, env, run.GetID())
	require.Contains(t, e.Reason, "waiting for the next window")
	time.Sleep(time.Until(closes) + 5*time.Second)
	spans := childSpans(t, env, names...)
	require.GreaterOrEqual(t, len(spans), 2, "updates ran while the window was open")
	require.Less(t, len(spans), len(names))
	for _, s := range spans {
		assert.False(t, s.start.Add(6*time.Second).After(closes), "%s started at %s and would end after the window closes at %s", s.target, s.start, closes)
	}
	e = explainOf(t, env, run.GetID())
	require.Equal(t, rollout.WaitWindow, e.Waiting)
	require.Contains(t, e.Reason, "outside the maintenance windows; the next opens")
	require.Equal(t, len(spans), len(childSpans(t, env, names...)), "nothing started after the window closed")
	replay.Record(t, env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/rollout-gates-window-wait.json")
}

// A freeze blocks a stage even once it is approved: nothing starts, and
// the explain answer and the ledger say which freeze.
func TestFreezeBlocksAnApprovedStage(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	startGatesWorker(t, env)
	now := time.Now().UTC()
	in := rollout.RolloutInput{Name: "freeze-" + env.TaskQueue,
		Calendar: &rollout.Calendar{Calendar: schedule.Calendar{Freezes: []schedule.Freeze{{From: now.Add(-time.Minute), To: now.Add(time.Hour), Reason: "incident 4711"}}}},
		Stages:   []rollout.Stage{{Name: "gated", Kind: rollout.KindTest, Concurrency: 1, Approval: true, Updates: rollout.TestUpdates(namerOf(env).test("a", 0, ""))}}}
	run := startRollout(t, env, in)
	defer func() { _ = env.Client.CancelWorkflow(context.Background(), run.GetID(), "") }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var gate *rollout.StagePlan
	require.Eventually(t, func() bool {
		v, err := env.Client.QueryWorkflow(ctx, run.GetID(), "", rollout.GatePlanQuery)
		return err == nil && v.Get(&gate) == nil && gate != nil
	}, 30*time.Second, 200*time.Millisecond)
	require.Equal(t, rollout.WaitApproval, explainOf(t, env, run.GetID()).Waiting)
	h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: workflows.ApproveUpdate,
		Args:         []any{workflows.Approval{By: "alice", Reason: "go", Stage: gate.Stage, PlanDigest: gate.Digest}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(ctx, nil))
	require.Eventually(t, func() bool { return explainOf(t, env, run.GetID()).Waiting == rollout.WaitFreeze }, 30*time.Second, 200*time.Millisecond)
	require.Contains(t, explainOf(t, env, run.GetID()).Reason, "incident 4711")
	time.Sleep(2 * time.Second)
	require.Empty(t, childSpans(t, env, namerOf(env).all("a")...), "an approved stage does not start in a freeze")
	events, err := env.Store.RolloutEvents(ctx, run.GetID())
	require.NoError(t, err)
	require.Len(t, events, 1)
	require.Equal(t, "freeze-wait", events[0].Kind)
	require.Contains(t, events[0].Reason, "incident 4711")
	replay.Record(t, env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/rollout-gates-freeze.json")
}

// Each event arrives once per webhook, signed, with a deterministic ID:
// a gate reached after each batch, the stage's end, a stall and its
// straggler, and, in a second rollout, the abort.
func TestWebhooksArriveOncePerEventSigned(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	secret := []byte("s3cret")
	recv, url := testenv.NewReceiver(t, secret)
	startGatesWorker(t, env, rollout.Webhook{Name: "ops", URL: url, Secret: secret})
	nm := namerOf(env)
	in := rollout.RolloutInput{Name: "notify-" + env.TaskQueue, Notify: &rollout.Notify{Webhooks: []string{"ops"}, StallAfter: 10 * time.Second},
		Stages: []rollout.Stage{{Name: "all", Kind: rollout.KindTest, Concurrency: 2,
			Updates: rollout.TestUpdates(nm.test("a", time.Second, ""), nm.test("b", 14*time.Second, ""), nm.test("c", time.Second, "")),
			Health:  &rollout.HealthGate{Checks: []rollout.HealthCheck{{Name: "api", URL: healthyEndpoint(t)}}}}}}
	run := startRollout(t, env, in)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil))

	abort := rollout.RolloutInput{Name: "notify-abort-" + env.TaskQueue, Notify: &rollout.Notify{Webhooks: []string{"ops"}},
		Stages: []rollout.Stage{{Name: "bad", Kind: rollout.KindTest, Concurrency: 1,
			Updates:    rollout.TestUpdates(nm.test("x", 0, failure.HostBootTimeout), nm.test("y", 0, "")),
			Thresholds: []rollout.Threshold{{Class: rollout.ClassTimeout, Percent: 0, Minimum: 1}}}}}
	arun := startRollout(t, env, abort)
	require.Error(t, arun.Get(ctx, nil))

	got := recv.ByType()
	require.Zero(t, recv.Bad())
	require.Len(t, got["rollout.gate.reached"], 2, "one gate per batch (a+b, then c)")
	require.Len(t, got["rollout.stage.ended"], 1)
	require.Len(t, got["rollout.stalled"], 1, "b ran 14 s with nothing else moving for 10 s")
	require.Len(t, got["rollout.update.straggler"], 1)
	require.Len(t, got["rollout.aborted"], 1)
	ids := map[string]bool{}
	for _, es := range got {
		for _, e := range es {
			require.False(t, ids[e.ID()], "event %s arrived twice", e.ID())
			ids[e.ID()] = true
		}
	}
	ab := got["rollout.aborted"][0]
	require.Equal(t, arun.GetID(), ab.Subject())
	require.True(t, strings.HasPrefix(ab.ID(), arun.GetID()+"/"), "the ID is the workflow ID's: %s", ab.ID())
	var data map[string]any
	require.NoError(t, ab.DataAs(&data))
	require.Contains(t, data["reason"], "failed with timeout")
	var straggler map[string]any
	require.NoError(t, got["rollout.update.straggler"][0].DataAs(&straggler))
	require.Equal(t, "test/"+string(nm)+"b", straggler["target"])
	replay.Record(t, env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/rollout-gates-notify.json")
}

// A window with endBehavior cancel: at its close the running updates are
// cancelled (they compensate) and the rollout ends with the window's
// reason; nothing more starts.
func TestWindowEndCancelCancelsRunningUpdates(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	startGatesWorker(t, env)
	nm := namerOf(env)
	now := time.Now().UTC()
	opened := now.Truncate(time.Minute)
	closes := now.Add(8 * time.Second).Truncate(time.Second)
	in := rollout.RolloutInput{Name: "window-cancel-" + env.TaskQueue,
		Calendar: &rollout.Calendar{EndBehavior: rollout.WindowEndCancel, Calendar: schedule.Calendar{Windows: []schedule.Window{{
			Days: []string{strings.ToLower(now.Weekday().String()[:3])}, Start: opened.Format("15:04"), Duration: closes.Sub(opened)}}}},
		Stages: []rollout.Stage{{Name: "all", Kind: rollout.KindTest, Concurrency: 2, Updates: rollout.TestUpdates(
			rollout.TestInput{Name: string(nm) + "a", Take: time.Minute, Compensate: time.Second},
			rollout.TestInput{Name: string(nm) + "b", Take: time.Minute, Compensate: time.Second},
			nm.test("c", time.Second, ""))}}}
	run := startRollout(t, env, in)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := run.Get(ctx, nil)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	require.Equal(t, failure.WindowClosed, app.Type())
	require.Contains(t, app.Message(), "running updates were cancelled")
	for _, n := range nm.all("a", "b") {
		d, err := env.Client.DescribeWorkflowExecution(ctx, workflows.WorkflowID(rollout.KindTest, "test/"+n), "")
		require.NoError(t, err)
		require.Equal(t, "Canceled", d.GetWorkflowExecutionInfo().GetStatus().String(), n)
		require.False(t, d.GetWorkflowExecutionInfo().GetCloseTime().AsTime().Before(closes), "%s was cancelled at the close, not before", n)
	}
	require.Empty(t, childSpans(t, env, nm.all("c")...), "nothing starts after the close")
	replay.Record(t, env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/rollout-gates-window-cancel.json")
}
