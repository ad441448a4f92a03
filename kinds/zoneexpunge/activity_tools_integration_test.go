package zoneexpunge_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// proofActivity is the zone removal proof wait (step 4).
const proofActivity = "AwaitZoneGone"

// An operator uses Temporal's activity tools on the zone removal proof
// wait of a Nexus expunge (today's sled-agent: the config is ledgered, the
// removal keeps failing in the background): pauses it past its heartbeat
// timeout (r.input: 3 s) and unpauses it; resets it, with and without its
// heartbeats; shortens its timeout. The removal fails until the tool was
// used, so the wait is open when it is. Each time the step polls again
// and the expunge commits only after the zone is really gone: one PUT of
// the sled config, the ledger's readiness after the removal, the attempt
// completed once (an expunge has no compensation: checkExpungeOutcome).
func TestZoneExpungeProofWaitUnderTheActivityTools(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	for _, c := range []struct {
		name string
		use  func(t *testing.T, env *testenv.Env, id, activityID string)
		// retried: the tool ended the running attempt, so the step that
		// completed is a later one (a reset starts its count again at 1).
		retried bool
	}{
		{"pause-past-heartbeat-then-unpause", func(t *testing.T, env *testenv.Env, id, aid string) {
			testenv.PauseActivity(t, env.Client, id, aid)
			time.Sleep(4 * time.Second)
			testenv.UnpauseActivity(t, env.Client, id, aid)
		}, true},
		{"reset", func(t *testing.T, env *testenv.Env, id, aid string) {
			testenv.ResetActivity(t, env.Client, id, aid, false)
		}, false},
		{"reset-heartbeats", func(t *testing.T, env *testenv.Env, id, aid string) {
			testenv.ResetActivity(t, env.Client, id, aid, true)
		}, false},
		{"timeout-shortened", func(t *testing.T, env *testenv.Env, id, aid string) {
			testenv.ShortenActivity(t, env.Client, id, aid, 500*time.Millisecond)
			time.Sleep(time.Second) // the running attempt times out while the zone is still there
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := testenv.Parallel(t)
			r := newZXRack(t, 0, spec.SledAgentLedgerFirst)
			sim := env.StartFleetsim(r.spec)
			fid, err := sim.Env.Faults.Arm(faults.Fault{Kind: faults.ZoneRemovalFailure, Target: "zone/" + r.nexusA.String()}) // until cleared
			require.NoError(t, err)
			env.StartWorker(workerapp.Deps{Fleet: r.endpoints(env, sim)})
			require.Eventually(t, func() bool { return nexusOf(sledTruth(t, sim), r.nexusA).SagasClaimed >= 5 },
				10*time.Second, 10*time.Millisecond)
			run := startZoneExpunge(t, env, r.input())
			require.Eventually(t, func() bool {
				v, err := env.Client.QueryWorkflow(context.Background(), run.GetID(), run.GetRunID(), workflows.ProgressQuery)
				var p zoneexpunge.ZoneExpungeProgress
				return err == nil && v.Get(&p) == nil && p.Phase == zoneexpunge.ZonePhaseAwaitingInventory &&
					sledOf(sledTruth(t, sim), r.sledA).RemovalAttempts[r.nexusA] >= 2
			}, time.Minute, 10*time.Millisecond, "the sled ledgered the config; the proof waits out the failing removal")
			pa := testenv.RunningActivity(t, env.Client, run.GetID(), proofActivity, 30*time.Second)
			c.use(t, env, run.GetID(), pa.GetActivityId())
			moved, err := env.Store.ReassignedSagas(context.Background(), r.nexusA)
			require.NoError(t, err)
			assert.Empty(t, moved, "no saga moved while the zone is still there")
			require.True(t, sim.Env.Faults.Clear(fid))
			r.removalErr = removalFailures(sim, fid)

			var res zoneexpunge.ZoneExpungeResult
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			require.NoError(t, run.Get(ctx, &res))
			assert.Equal(t, 1, res.PutAttempts, "one PUT of the sled config")
			assert.False(t, res.CancelIgnored)
			checkExpungeOutcome(t, env, sim, r, res)
			atts, err := env.Store.Attempts(ctx, run.GetID())
			require.NoError(t, err)
			assert.Len(t, atts, 1, "the expunge ran once: %+v", atts)
			if c.retried {
				assert.Greater(t, testenv.LastActivityAttempt(t, env.Client, run.GetID(), proofActivity), int32(1), "the tool ended the running attempt")
			}
		})
	}
}
