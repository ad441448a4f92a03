package mgsupdate_test

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// gatedResetPlan updates the SPs of cubbies 1, 2 and 3 to version behind a
// gate on every SP's health: batch 1 is sled 1, batch 2 sleds 2 and 3, each
// followed by a 10 s bake of rounds a second apart.
func (st *mgsStack) gatedResetPlan(name, version string) rollout.RolloutInput {
	stage := st.spStage("sps", version, 1, 2, 3)
	stage.Concurrency = 2
	// A bake long enough for the test to catch it between rounds on a
	// loaded machine (3 s left a window of about 2 s, missed once).
	stage.Health.Bake = 10 * time.Second
	return rollout.RolloutInput{Name: name + "-" + st.env.TaskQueue, Notify: &rollout.Notify{Webhooks: []string{"ops"}}, Stages: []rollout.Stage{stage}}
}

// An operator resets a gated rollout while its gate bakes after batch 1
// (between two rounds), to each point: the first workflow task (mid-stage),
// the last one, one in the middle. The rollout ends as it would have: every
// SP runs the release, each got our image once and the ledger holds one
// attempt per target; each gate round is in the ledger once with one
// verdict, each batch passed once; every webhook event's deliveries carry
// one ID and one payload; starter explain says the rollout completed.
func TestGatedRolloutResetWhileTheGateBakes(t *testing.T) {
	for _, p := range testenv.ResetPoints {
		t.Run(string(p), func(t *testing.T) {
			recv, url := testenv.NewReceiver(t, []byte("s3cret"))
			st := newPromStack(t, rollout.Webhook{Name: "ops", URL: url, Secret: []byte("s3cret")})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			in := st.gatedResetPlan("gate-reset", "1.1.0")
			run := st.startRollout(in)
			var e rollout.Explanation
			if !assert.Eventually(t, func() bool {
				e = st.explain(run.GetID())
				return e.Waiting == rollout.WaitGate && e.Gate != nil && e.Gate.Batch == 1 && e.Gate.Round >= 2
			}, time.Minute, 50*time.Millisecond) {
				t.Fatalf("the gate after batch 1 never reached its second round; the rollout explains: %+v", e)
			}
			reset := testenv.ResetWorkflow(t, st.env.Client, run.GetID(), p)

			st.requireCompletedOnce(ctx, reset)
			events := st.rolloutEvents(run.GetID())
			requireGateRoundsOnce(t, events, 2)
			for _, e := range events {
				assert.NotEqual(t, "aborted", e.Kind, "%+v", e)
			}
			requireWebhooksConsistent(t, recv, map[string]int{"rollout.gate.reached": 2, "rollout.stage.ended": 1})
			switch p {
			case testenv.ResetFirst:
				replay.Record(t, st.env.Client, reset.GetID(), reset.GetRunID(), "../testdata/histories/rollout-gates-reset-first-task.json")
			case testenv.ResetLast:
				replay.Record(t, st.env.Client, reset.GetID(), reset.GetRunID(), "../testdata/histories/rollout-gates-reset-last-task.json")
			}
		})
	}
}

// A gate that failed (a bad release made sled 1's SP unhealthy) aborted the
// rollout; the fault is then gone, so a new check would pass. An operator
// resets the rollout to its first workflow task, before the gate: the gate
// the ledger recorded as failed does not pass silently. The reset run
// stops again with the recorded reason, sleds 2 and 3 keep what they ran,
// the ledger holds each failed round and the abort once, the abort's
// webhook event is one event, and starter explain names the failed gate.
func TestGatedRolloutResetBeforeAFailedGate(t *testing.T) {
	recv, url := testenv.NewReceiver(t, []byte("s3cret"))
	st := newPromStack(t, rollout.Webhook{Name: "ops", URL: url, Secret: []byte("s3cret")})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before := st.truth(2).SP.Active.Version
	st.arm(faults.Fault{Kind: faults.BadVersion, Target: "*", Version: "1.2.0"})
	run := st.startRollout(st.gatedResetPlan("failed-gate-reset", "1.2.0"))
	requireGateFailed(t, run.Get(ctx, nil))
	st.clearFaults()
	// Prometheus scrapes every second: after a few, the SPs read healthy
	// and a round run now would pass.
	time.Sleep(3 * time.Second)

	reset := testenv.ResetWorkflow(t, st.env.Client, run.GetID(), testenv.ResetFirst)
	requireGateFailed(t, reset.Get(ctx, nil))
	st.requireUpdatedOnce(1, "1.2.0")
	for _, c := range []int{2, 3} {
		require.Equal(t, before, st.truth(c).SP.Active.Version, "sled %d untouched: the failed gate still holds", c)
		require.Empty(t, st.truth(c).Deliveries)
	}
	events := st.rolloutEvents(run.GetID())
	requireGateRoundsOnce(t, events, 0)
	aborted, failed := 0, 0
	for _, e := range events {
		switch {
		case e.Kind == "aborted":
			aborted++
			require.Contains(t, e.Reason, "health gate failed after batch 1")
		case e.Kind == "gate-round" || e.Kind == "gate-passed":
			// Round 1 too: it judges data scraped after batch 1 ended.
			require.Equal(t, "fail", e.Verdict, "a round of the failed gate: %+v", e)
			failed++
		}
	}
	require.Equal(t, 1, aborted, "%+v", events)
	require.Equal(t, 2, failed, "the gate's two failed rounds (failuresToAbort), once each: %+v", events)
	requireWebhooksConsistent(t, recv, map[string]int{"rollout.gate.reached": 1, "rollout.aborted": 1})
	out := st.starter("explain", run.GetID())
	require.Contains(t, out, "the rollout stopped itself in stage sps: health gate failed after batch 1")
	require.Contains(t, out, `target="sp/sled/1"`)
	replay.Record(t, st.env.Client, reset.GetID(), reset.GetRunID(), "../testdata/histories/rollout-gates-reset-failed-gate.json")
}

func requireGateFailed(t *testing.T, err error) {
	t.Helper()
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	require.Equal(t, failure.HealthGateFailed, app.Type(), "%v", err)
}

// requireUpdatedOnce: the SP of cubby runs version, got our image once,
// and the ledger holds one attempt for it, completed.
func (st *mgsStack) requireUpdatedOnce(cubby int, version string) {
	st.t.Helper()
	tr := st.truth(cubby)
	require.Equal(st.t, version, tr.SP.Active.Version, "sled %d", cubby)
	require.Len(st.t, tr.Deliveries, 1, "sled %d got our image once: %+v", cubby, tr.Deliveries)
	target := st.spInput(cubby, version).Target()
	atts, err := st.env.Store.Attempts(context.Background(), workflows.WorkflowID(workflows.KindSPFirmware, target))
	require.NoError(st.t, err)
	require.Len(st.t, atts, 1, "one attempt for %s: %+v", target, atts)
	require.Equal(st.t, ledger.StateCompleted, atts[0].State)
	require.Equal(st.t, tr.Deliveries[0].UpdateID, atts[0].ID, "the ledger's attempt is the delivered update")
	st.checkTargetFree(target)
}

func (st *mgsStack) rolloutEvents(id string) []ledger.RolloutEvent {
	st.t.Helper()
	events, err := st.env.Store.RolloutEvents(context.Background(), id)
	require.NoError(st.t, err)
	return events
}

func (st *mgsStack) clearFaults() {
	st.t.Helper()
	req, err := http.NewRequest(http.MethodDelete, st.sim.URL+"/faults", nil)
	require.NoError(st.t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(st.t, err)
	resp.Body.Close()
}

// gateRound reads a gate row's batch and round from its reason ("batch 2
// round 3: …", "batch 2 healthy after 4 rounds: …").
var gateRound = regexp.MustCompile(`^batch (\d+) (?:round (\d+)|healthy after (\d+) rounds)`)

// requireGateRoundsOnce: the ledger holds each gate round once with one
// verdict, a batch's rounds are 1..n with its pass (if any) the last, and
// passed batches passed.
func requireGateRoundsOnce(t *testing.T, events []ledger.RolloutEvent, passed int) {
	t.Helper()
	rounds := map[int]int{}     // batch → rounds recorded
	passedAt := map[int]int{}   // batch → the round that passed it
	seen := map[string]string{} // batch/round → verdict
	for _, e := range events {
		if e.Kind != "gate-round" && e.Kind != "gate-passed" {
			continue
		}
		m := gateRound.FindStringSubmatch(e.Reason)
		require.NotNil(t, m, "a gate row without its batch and round: %+v", e)
		batch, _ := strconv.Atoi(m[1])
		round, _ := strconv.Atoi(m[2] + m[3])
		key := m[1] + "/" + strconv.Itoa(round)
		_, twice := seen[key]
		require.False(t, twice, "batch %d round %d recorded twice (%s, then %s): %+v", batch, round, seen[key], e.Verdict, events)
		seen[key] = e.Verdict
		_, done := passedAt[batch]
		require.False(t, done, "a round of batch %d recorded after the batch passed: %+v", batch, events)
		rounds[batch]++
		require.Equal(t, rounds[batch], round, "batch %d's rounds in order, none missing: %+v", batch, events)
		if e.Kind == "gate-passed" {
			passedAt[batch] = round
		}
	}
	require.Len(t, passedAt, passed, "each batch's gate passed once: %+v", events)
}

// requireWebhooksConsistent: each event ID's deliveries carry the same
// event (a receiver keeps the first), and want says how many distinct
// events of each type arrived.
func requireWebhooksConsistent(t *testing.T, recv *testenv.Receiver, want map[string]int) {
	t.Helper()
	require.Zero(t, recv.Bad())
	for id, es := range recv.ByID() {
		for _, e := range es[1:] {
			require.Equal(t, e.Type(), es[0].Type(), "event %s", id)
			require.JSONEq(t, string(es[0].Data()), string(e.Data()), "event %s delivered with two payloads", id)
		}
	}
	for typ, n := range want {
		ids := map[string]bool{}
		for _, e := range recv.ByType()[typ] {
			ids[e.ID()] = true
		}
		require.Len(t, ids, n, "%s events: %v", typ, ids)
	}
}
