package zoneexpunge_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/nexusdb"
	"github.com/fleetsaga/fleetsaga/fleet/nexuslockstep"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// An operator resets a Nexus zone expunge in owner mode (Nexus's executor
// carries the expunge out) while it waits for inventory to prove the zone
// gone (the removal keeps failing in the background), to each point. The
// reset run keeps its attempt, finds its own child blueprint already the
// target instead of making another, and proves Nexus's work again before
// its ledger commits: the expunge ends once, one child blueprint, the
// ledger's readiness and commit after the zone's removal, no saga left on
// the expunged Nexus and every moved one on the Nexus of its generation.
// The removal fails until the reset is made: with a fixed number of
// failures the proof wait (about a second at the sim's speed-up) could end
// before a slow query saw it.
func TestZoneExpungeOwnerModeResetWhileAwaitingProof(t *testing.T) {
	// awaitProofWindow bounds reaching the proof wait with two failed
	// removals: 30 s ran out once beside the parallel stack tests of other
	// packages on a 2-core machine.
	const awaitProofWindow = time.Minute
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	for _, p := range testenv.ResetPoints {
		t.Run(string(p), func(t *testing.T) {
			env := testenv.New(t)
			r := newZXRack(t, 0, spec.SledAgentLedgerFirst)
			r.spec.Racks[0].Owners = spec.RackOwners{} // today's rack: every owner on
			require.NoError(t, r.spec.Validate())
			sim := env.StartFleetsim(r.spec)
			fid, err := sim.Env.Faults.Arm(faults.Fault{Kind: faults.ZoneRemovalFailure, Target: "zone/" + r.nexusA.String()}) // until cleared
			require.NoError(t, err)
			env.StartWorker(workerapp.Deps{Fleet: r.endpoints(env, sim)})
			require.Eventually(t, func() bool { return nexusOf(sledTruth(t, sim), r.nexusA).SagasClaimed >= 5 },
				10*time.Second, 10*time.Millisecond)
			in := r.input()
			in.Timing.OwnerTimeout = 2 * time.Minute
			run := startZoneExpunge(t, env, in)
			require.Eventually(t, func() bool {
				v, err := env.Client.QueryWorkflow(context.Background(), run.GetID(), run.GetRunID(), workflows.ProgressQuery)
				var pr zoneexpunge.ZoneExpungeProgress
				return err == nil && v.Get(&pr) == nil && pr.Phase == zoneexpunge.ZonePhaseAwaitingInventory &&
					sledOf(sledTruth(t, sim), r.sledA).RemovalAttempts[r.nexusA] >= 2
			}, awaitProofWindow, 10*time.Millisecond, "Nexus pushed the expunge; the proof waits out the failing removal")
			reset := testenv.ResetWorkflow(t, env.Client, run.GetID(), p)
			require.True(t, sim.Env.Faults.Clear(fid))
			failed := removalFailures(sim, fid)

			var res zoneexpunge.ZoneExpungeResult
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			require.NoError(t, reset.Get(ctx, &res))
			assert.Equal(t, zoneexpunge.ZoneOutcomeExpunged, res.Outcome)
			assert.Equal(t, zoneexpunge.ModeOwner, res.Mode)
			assert.Zero(t, res.PutAttempts, "fleetsaga wrote no sled config")
			checkOwnerResetOutcome(t, env, sim, r, failed, run.GetID(), res)
		})
	}
}

// checkOwnerResetOutcome asserts what an owner-mode expunge must leave
// behind however often it was reset, after failedRemovals failed removals.
func checkOwnerResetOutcome(t *testing.T, env *testenv.Env, sim *fleetsim.Server, r zxRack, failedRemovals int, workflowID string, res zoneexpunge.ZoneExpungeResult) {
	t.Helper()
	ctx := context.Background()
	atts, err := env.Store.Attempts(ctx, workflowID)
	require.NoError(t, err)
	require.Len(t, atts, 1, "the expunge ran once: %+v", atts)
	assert.Equal(t, ledger.StateCompleted, atts[0].State)
	assert.Equal(t, res.AttemptID, atts[0].ID)
	active, err := env.Store.ActiveForTarget(ctx, r.input().Target())
	require.NoError(t, err)
	assert.Nil(t, active, "an attempt is left active on the zone")

	assert.Equal(t, 1, fleetsagaBlueprints(t, sim, r), "one child blueprint expunging the zone")

	st := sledOf(sledTruth(t, sim), r.sledA)
	assert.Equal(t, failedRemovals+1, st.RemovalAttempts[r.nexusA], "every failed removal retried, then one success")
	removedAt, ok := st.RemovedAt[r.nexusA]
	require.True(t, ok, "zone A removed")
	z, err := env.Store.ZoneDisposition(ctx, r.nexusA)
	require.NoError(t, err)
	assert.Equal(t, ledger.ZoneExpunged, z.Disposition)
	require.NotNil(t, z.ReadyAt)
	require.NotNil(t, z.CompletedAt)
	assert.True(t, z.ReadyAt.After(removedAt), "ready_for_cleanup recorded only after the zone was removed")
	assert.False(t, z.CompletedAt.Before(*z.ReadyAt), "committed only after the proof")
	assert.Equal(t, r.nexusB, z.SagaNewOwner)
	assert.Positive(t, z.SagasMoved, "A held unfinished sagas when it was expunged")

	ndb, err := nexusdb.Open(fleet.FleetsimNexusDB(env.DatabaseURL))
	require.NoError(t, err)
	defer ndb.Close()
	left, err := ndb.CountUnfinished(ctx, r.nexusA)
	require.NoError(t, err)
	assert.Zero(t, left, "no unfinished saga left on the expunged Nexus")
	moved, err := env.Store.ReassignedSagas(ctx, r.nexusA)
	require.NoError(t, err)
	assert.Len(t, moved, z.SagasMoved)
	owners, err := ndb.SagaOwners(ctx, moved)
	require.NoError(t, err)
	for id, o := range owners {
		assert.Equal(t, r.nexusB, o.Sec, "saga %s held by a Nexus of another generation", id)
	}
}

// fleetsagaBlueprints counts the blueprints fleetsaga imported into the
// rack's Nexus.
func fleetsagaBlueprints(t *testing.T, sim *fleetsim.Server, r zxRack) int {
	t.Helper()
	lc := nexuslockstep.New(sim.URL+"/nexus/"+r.spec.Racks[0].ID, nil)
	n := 0
	for _, id := range nexusTruth(t, sim).Blueprints {
		bp, err := lc.Blueprint(context.Background(), id)
		require.NoError(t, err)
		raw, err := json.Marshal(bp)
		require.NoError(t, err)
		var m struct {
			Creator string    `json:"creator"`
			ID      uuid.UUID `json:"id"`
		}
		require.NoError(t, json.Unmarshal(raw, &m))
		if m.Creator == "fleetsaga" {
			n++
		}
	}
	return n
}

// removalFailures is how often the cleared fault id failed a removal.
func removalFailures(sim *fleetsim.Server, id int) int {
	for _, f := range sim.Env.Faults.Fired() {
		if f.ID == id {
			return f.Fired
		}
	}
	return 0
}
