package mgsupdate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/schedule"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// observeWindow is how long a test gives itself to see a rollout in a
// state (waiting for a freeze or a window), reset it and see it again
// before the state ends on its own: enough on a loaded 2-core machine
// running other stack tests beside it (12 s was not).
const observeWindow = 25 * time.Second

// An operator resets a gated rollout while it is paused on inconclusive
// results (Prometheus is unreachable for the worker), to the first and
// the last workflow task. The reset run keeps the recorded rounds'
// verdicts and so is paused again with the recorded reason (starter
// explain says so); the operator then fixes the monitor and resumes
// (starter resume): the rollout ends completed, every SP got our image
// once, one ledger attempt per target, each gate round and the pause
// recorded once.
func TestGatedRolloutResetWhilePausedOnInconclusiveResults(t *testing.T) {
	for _, p := range []testenv.ResetPoint{testenv.ResetFirst, testenv.ResetLast} {
		t.Run(string(p), func(t *testing.T) {
			st := newMonitoredStack(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			st.monitorDown.Store(true)
			in := st.gatedResetPlan("paused-reset", "1.1.0")
			in.Notify = nil
			run := st.startRollout(in)
			e := st.awaitExplained(run.GetID(), 2*time.Minute, "the gate's pause", waiting(rollout.WaitPaused))
			require.Contains(t, e.Reason, "Prometheus did not answer")

			reset := testenv.ResetWorkflow(t, st.env.Client, run.GetID(), p)
			// The reset run keeps the recorded inconclusive rounds and pauses again.
			st.awaitExplained(run.GetID(), time.Minute, "the reset run's pause", waiting(rollout.WaitPaused))
			out := st.starter("explain", run.GetID())
			require.Contains(t, out, "paused (for ")
			require.Contains(t, out, "health gate inconclusive 2 times after batch 1")
			require.NotEqual(t, "1.1.0", st.truth(2).SP.Active.Version, "batch 2 waits for the gate")

			st.monitorDown.Store(false)
			st.starter("resume", run.GetID())
			st.requireCompletedOnce(ctx, reset)
			events := st.rolloutEvents(run.GetID())
			requireGateRoundsOnce(t, events, 2)
			requireNoRowTwice(t, events)
			require.Equal(t, 1, countKind(events, "paused"), "one pause, the recorded one: %+v", events)
			require.Zero(t, countKind(events, "aborted"), "%+v", events)
			if p == testenv.ResetFirst {
				replay.Record(t, st.env.Client, reset.GetID(), reset.GetRunID(), "../testdata/histories/rollout-gates-reset-paused.json")
			}
		})
	}
}

// frozenPlan is gatedResetPlan under a freeze that began a minute ago and
// ends at to.
func (st *mgsStack) frozenPlan(name string, to time.Time) rollout.RolloutInput {
	in := st.gatedResetPlan(name, "1.1.0")
	in.Notify = nil
	in.Calendar = &rollout.Calendar{Calendar: schedule.Calendar{Freezes: []schedule.Freeze{{From: time.Now().Add(-time.Minute), To: to, Reason: "incident 4711"}}}}
	return in
}

// An operator resets a rollout while a freeze holds it, to the first and
// the last workflow task. The reset run is blocked by the same freeze
// (starter explain says which), the ledger keeps the one freeze-wait row
// recorded before the reset, and when the freeze ends the rollout goes
// on and ends completed: every SP got our image once, one ledger
// attempt per target, each gate round once.
func TestRolloutResetWhileAFreezeHoldsIt(t *testing.T) {
	for _, p := range []testenv.ResetPoint{testenv.ResetFirst, testenv.ResetLast} {
		t.Run(string(p), func(t *testing.T) {
			st := newMonitoredStack(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			run := st.startRollout(st.frozenPlan("freeze-reset", time.Now().Add(observeWindow)))
			st.awaitExplained(run.GetID(), observeWindow, "the wait for the freeze", waiting(rollout.WaitFreeze))
			reset := testenv.ResetWorkflow(t, st.env.Client, run.GetID(), p)
			st.awaitExplained(run.GetID(), time.Minute, "the reset run's wait for the same freeze", waiting(rollout.WaitFreeze))
			out := st.starter("explain", run.GetID())
			require.Contains(t, out, "blocked by a change freeze")
			require.Contains(t, out, "incident 4711")

			st.requireCompletedOnce(ctx, reset)
			requireWaitDecidedOnce(t, st.rolloutEvents(run.GetID()), "freeze-wait", "incident 4711")
			if p == testenv.ResetFirst {
				replay.Record(t, st.env.Client, reset.GetID(), reset.GetRunID(), "../testdata/histories/rollout-freeze-reset-first-task.json")
			}
		})
	}
}

// A freeze held a rollout; its worker was down when the freeze ended, and
// the operator resets the rollout (to the first workflow task) before a
// worker is back. The reset run's calendar answers differently: no
// freeze. It goes on at once (starter explain no longer names the
// freeze) and ends completed, every SP updated once; the ledger holds
// both decisions in order, the recorded freeze-wait first, then the
// reset run's gate rounds, each once.
func TestRolloutResetAfterItsFreezeEnded(t *testing.T) {
	st := newMonitoredStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ends := time.Now().Add(observeWindow)
	run := st.startRollout(st.frozenPlan("freeze-lifted", ends))
	st.awaitExplained(run.GetID(), observeWindow, "the wait for the freeze", waiting(rollout.WaitFreeze))
	st.stopWorker()
	time.Sleep(time.Until(ends) + time.Second)
	reset := testenv.ResetWorkflow(t, st.env.Client, run.GetID(), testenv.ResetFirst)
	st.stopWorker = st.env.StartWorker(st.deps)
	st.requireOnWithoutTheFreeze(ctx, reset)
	replay.Record(t, st.env.Client, reset.GetID(), reset.GetRunID(), "../testdata/histories/rollout-freeze-reset-lifted.json")
}

// A freeze held a rollout, ended, and the rollout went on: its gate bakes
// after batch 1 when an operator resets it to the first workflow task,
// before the freeze. The reset run finds no freeze (a different decision
// at that point, kept after the recorded rows) and must not judge again
// the rounds recorded after the freeze: it ends completed, every SP
// updated once, each gate round in the ledger once, the freeze-wait first.
func TestRolloutResetToBeforeAFreezeThatEnded(t *testing.T) {
	st := newMonitoredStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := st.startRollout(st.frozenPlan("freeze-ended", time.Now().Add(observeWindow)))
	st.awaitExplained(run.GetID(), 2*time.Minute, "round 2 of the gate after batch 1", func(e rollout.Explanation) bool {
		return e.Waiting == rollout.WaitGate && e.Gate != nil && e.Gate.Batch == 1 && e.Gate.Round >= 2
	})
	reset := testenv.ResetWorkflow(t, st.env.Client, run.GetID(), testenv.ResetFirst)
	st.requireOnWithoutTheFreeze(ctx, reset)
	replay.Record(t, st.env.Client, reset.GetID(), reset.GetRunID(), "../testdata/histories/rollout-freeze-reset-ended.json")
}

// An operator resets a rollout (to its first workflow task) while it
// waits for its maintenance window to open. The reset run waits for the
// same window (starter explain says when it opens), the ledger keeps the
// one window-wait recorded before the reset, and once the window opens
// the rollout ends completed, every SP updated once.
func TestRolloutResetWhileItWaitsForAWindow(t *testing.T) {
	st := newMonitoredStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// Windows start on a minute: the next one at least observeWindow away.
	opens := time.Now().UTC().Add(observeWindow).Truncate(time.Minute).Add(time.Minute)
	in := st.gatedResetPlan("window-reset", "1.1.0")
	in.Notify = nil
	in.Calendar = &rollout.Calendar{Calendar: schedule.Calendar{Windows: []schedule.Window{{
		Days: []string{strings.ToLower(opens.Weekday().String()[:3])}, Start: opens.Format("15:04"), Duration: time.Hour}}}}
	run := st.startRollout(in)
	st.awaitExplained(run.GetID(), observeWindow, "the wait for the window", waiting(rollout.WaitWindow))
	reset := testenv.ResetWorkflow(t, st.env.Client, run.GetID(), testenv.ResetFirst)
	e := st.awaitExplained(run.GetID(), time.Minute, "the reset run's wait for the same window", waiting(rollout.WaitWindow))
	next := "the next opens " + opens.Format(time.RFC3339)
	require.Contains(t, st.starter("explain", run.GetID()), "waiting for a maintenance window")
	require.Contains(t, e.Reason, next)

	st.requireCompletedOnce(ctx, reset)
	requireWaitDecidedOnce(t, st.rolloutEvents(run.GetID()), "window-wait", next)
	replay.Record(t, st.env.Client, reset.GetID(), reset.GetRunID(), "../testdata/histories/rollout-window-reset.json")
}

// requireOnWithoutTheFreeze: the reset run of a frozen plan finds the
// freeze over and goes on at once (starter explain no longer names it),
// then ends as requireCompletedOnce says, with the recorded freeze-wait
// kept first.
func (st *mgsStack) requireOnWithoutTheFreeze(ctx context.Context, reset client.WorkflowRun) {
	st.t.Helper()
	st.awaitExplained(reset.GetID(), time.Minute, "the reset run past the freeze", func(e rollout.Explanation) bool { return e.Waiting != rollout.WaitFreeze })
	require.NotContains(st.t, st.starter("explain", reset.GetID()), "blocked by a change freeze")
	st.requireCompletedOnce(ctx, reset)
	requireWaitDecidedOnce(st.t, st.rolloutEvents(reset.GetID()), "freeze-wait", "incident 4711")
}

// requireWaitDecidedOnce: the ledger holds the wait (kind, its reason
// naming why) the run before the reset recorded, once, first, and every
// other decision after it, each gate round once, no decision twice.
func requireWaitDecidedOnce(t *testing.T, events []ledger.RolloutEvent, kind, why string) {
	t.Helper()
	requireGateRoundsOnce(t, events, 2)
	requireNoRowTwice(t, events)
	require.Equal(t, 1, countKind(events, kind), "%+v", events)
	require.Equal(t, kind, events[0].Kind, "the recorded decision first: %+v", events)
	require.Contains(t, events[0].Reason, why)
	for _, ev := range events[1:] {
		require.Greater(t, ev.Seq, events[0].Seq, "every later decision after the recorded one: %+v", events)
	}
}

// awaitExplained waits up to within for the rollout's explain answer to
// be what ok wants, and returns it; the test fails naming what never came.
func (st *mgsStack) awaitExplained(id string, within time.Duration, what string, ok func(rollout.Explanation) bool) rollout.Explanation {
	st.t.Helper()
	var e rollout.Explanation
	if !assert.Eventually(st.t, func() bool { e = st.explain(id); return ok(e) }, within, 100*time.Millisecond) {
		st.t.Fatalf("%s never came; the rollout explains: %+v", what, e)
	}
	return e
}

func waiting(w rollout.WaitReason) func(rollout.Explanation) bool {
	return func(e rollout.Explanation) bool { return e.Waiting == w }
}

// requireCompletedOnce: the rollout run ends completed, every SP of
// gatedResetPlan runs the release, got our image once, one ledger
// attempt each; starter explain says so.
func (st *mgsStack) requireCompletedOnce(ctx context.Context, run client.WorkflowRun) {
	t := st.t
	t.Helper()
	var res rollout.RolloutResult
	require.NoError(t, run.Get(ctx, &res), "%+v", st.explain(run.GetID()))
	require.Len(t, res.Outcomes, 3)
	for _, o := range res.Outcomes {
		assert.Equal(t, workflows.StateCompleted, o.State, "%+v", o)
	}
	for _, c := range []int{1, 2, 3} {
		st.requireUpdatedOnce(c, "1.1.0")
	}
	require.Contains(t, st.starter("explain", run.GetID()), "the rollout ended: completed")
}

// requireNoRowTwice: no decision is in the ledger twice (the same stage,
// kind and reason), and every row has its own seq.
func requireNoRowTwice(t *testing.T, events []ledger.RolloutEvent) {
	t.Helper()
	seqs, seen := map[int]bool{}, map[string]bool{}
	for _, e := range events {
		require.False(t, seqs[e.Seq], "seq %d twice: %+v", e.Seq, events)
		seqs[e.Seq] = true
		key := e.Stage + "|" + e.Kind + "|" + e.Reason
		require.False(t, seen[key], "%s recorded twice: %+v", key, events)
		seen[key] = true
	}
}

func countKind(events []ledger.RolloutEvent, kind string) int {
	n := 0
	for _, e := range events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}
