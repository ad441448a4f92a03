package zoneexpunge_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/nexusdb"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// zxRack is a rack whose sled 0 runs Nexus A (to expunge) and sled 1 Nexus B.
// Sagas run 1 s (100 s at speed-up 100), so A always holds unfinished ones.
type zxRack struct {
	spec       *spec.Spec
	sledA      uuid.UUID
	nexusA     uuid.UUID
	nexusB     uuid.UUID
	sleds      []uuid.UUID
	removalErr int // zone removal failures on A: armed, or counted once an open-ended fault is cleared
	mode       string
}

// zxModes are the sled-agent modes every zone expunge test runs in: today's
// (ledger first, removal in the background) and the opt-in seed rule.
var zxModes = []string{spec.SledAgentLedgerFirst, spec.SledAgentRemoveBeforeLedger}

func newZXRack(t *testing.T, removalFailures int, mode string) zxRack {
	s := &spec.Spec{Seed: 5, SpeedUp: 100, Timings: spec.DefaultTimings()}
	s.Timings.SagaRunTime.Duration = 100 * time.Second
	r := zxRack{spec: s, nexusA: uuid.New(), nexusB: uuid.New(), removalErr: removalFailures, mode: mode}
	// Direct mode: no Nexus owns the sleds' configs (the owner-mode tests
	// turn the rack's owners, today's default, back on).
	rack := spec.Rack{ID: "rack-zx", MGSSleds: []int{0, 1}, SledAgentMode: mode, Owners: spec.NoOwners()}
	zones := [][]spec.Zone{
		{{ID: uuid.New(), Kind: "internal_ntp"}, {ID: r.nexusA, Kind: "nexus"}},
		{{ID: r.nexusB, Kind: "nexus"}, {ID: uuid.New(), Kind: "crucible"}},
		{{ID: uuid.New(), Kind: "crucible"}},
	}
	for i, zs := range zones {
		sl := spec.Sled{ID: uuid.New(), Cubby: i, Serial: fmt.Sprintf("BRM%06d", i), Part: "913-0000019",
			SP: spec.SPFirmware{Active: "1.0.0", Inactive: "1.0.0"}, Host: spec.HostFlash{Slots: [2]string{"1.0.0", "1.0.0"}},
			Generation: 3, Zones: zs}
		rack.Sleds = append(rack.Sleds, sl)
		r.sleds = append(r.sleds, sl.ID)
	}
	r.sledA = r.sleds[0]
	s.Racks = []spec.Rack{rack}
	if removalFailures > 0 {
		s.Faults = []faults.Fault{{Kind: faults.ZoneRemovalFailure, Target: "zone/" + r.nexusA.String(), Times: removalFailures}}
	}
	require.NoError(t, s.Validate())
	return r
}

func (r zxRack) input() zoneexpunge.ZoneExpungeInput {
	// No RackSleds: the rack's sleds come from Nexus's sled table.
	return zoneexpunge.ZoneExpungeInput{Sled: r.sledA, Zone: r.nexusA, Timing: zoneexpunge.ZoneExpungeTiming{
		RetryInitial: 100 * time.Millisecond, RetryMax: 300 * time.Millisecond, PollInterval: 20 * time.Millisecond,
		PutTimeout: 2 * time.Minute, HeartbeatTimeout: 3 * time.Second,
	}}
}

// endpoints are the fleet's: a rack without a Nexus (the owners off) is
// driven in direct mode, which a deployment says explicitly.
func (r zxRack) endpoints(env *testenv.Env, sim *fleetsim.Server) fleet.Endpoints {
	e := env.Endpoints(sim)
	if !r.spec.Racks[0].Owners.NexusOn() {
		e.DirectMode, e.NexusLockstep = true, ""
	}
	return e
}

func startZoneExpunge(t *testing.T, env *testenv.Env, in zoneexpunge.ZoneExpungeInput) client.WorkflowRun {
	run, err := env.Client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID:                    workflows.WorkflowID(workflows.KindZoneExpunge, in.Target()),
		TaskQueue:             env.TaskQueue,
		TypedSearchAttributes: workflows.StartAttributes(workflows.KindZoneExpunge, in.Target(), ""),
	}, zoneexpunge.ZoneExpunge, in)
	require.NoError(t, err)
	return run
}

func sledTruth(t *testing.T, sim *fleetsim.Server) sled.Truth {
	t.Helper()
	tr, ok := sim.Truth()[sled.Name].(sled.Truth)
	require.True(t, ok)
	return tr
}

func nexusOf(tr sled.Truth, zone uuid.UUID) sled.NexusTruth {
	for _, n := range tr.Nexus {
		if n.ZoneID == zone {
			return n
		}
	}
	return sled.NexusTruth{}
}

func sledOf(tr sled.Truth, id uuid.UUID) sled.SledTruth {
	for _, s := range tr.Sleds {
		if s.ID == id {
			return s
		}
	}
	return sled.SledTruth{}
}

func qcount(t *testing.T, db *sql.DB, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(q, args...).Scan(&n), q)
	return n
}

// checkExpungeOutcome asserts the end state every run must reach, however
// it got there: the zone gone at generation 4, the ledger committed, no
// unfinished saga left on A, none claimed by A after its zone was removed,
// none lost or run twice, every moved saga adopted by B after the removal.
func checkExpungeOutcome(t *testing.T, env *testenv.Env, sim *fleetsim.Server, r zxRack, res zoneexpunge.ZoneExpungeResult) {
	t.Helper()
	ctx := context.Background()
	assert.Equal(t, zoneexpunge.ZoneOutcomeExpunged, res.Outcome)
	assert.Equal(t, uint64(4), res.ExpungedAsOf)
	assert.Equal(t, uint64(4), res.ObservedGeneration)
	assert.Equal(t, r.nexusB, res.NewOwner, "the only live Nexus adopts")
	assert.Equal(t, "nexus", res.Kind)

	tr := sledTruth(t, sim)
	st := sledOf(tr, r.sledA)
	assert.Equal(t, uint64(4), st.LedgeredGeneration)
	assert.Equal(t, r.removalErr+1, st.RemovalAttempts[r.nexusA], "every failed removal retried, then one success")
	removedAt, ok := st.RemovedAt[r.nexusA]
	require.True(t, ok, "zone A removed")
	assert.False(t, nexusOf(tr, r.nexusA).Running)

	db := env.Store.DB()
	ndb, err := nexusdb.Open(fleet.FleetsimNexusDB(env.DatabaseURL))
	require.NoError(t, err)
	defer ndb.Close()
	left, err := ndb.CountUnfinished(ctx, r.nexusA)
	require.NoError(t, err)
	assert.Zero(t, left, "no unfinished saga belongs to the expunged Nexus")
	assert.Zero(t, qcount(t, db, `SELECT count(*) FROM fleetsim.saga_history WHERE sec = $1 AND at > $2`, r.nexusA, removedAt),
		"the expunged Nexus acted after its zone was removed")

	// The gate: each saga moved off A was adopted after A was gone and after
	// the ledger recorded the inventory proof.
	z, err := env.Store.ZoneDisposition(ctx, r.nexusA)
	require.NoError(t, err)
	assert.Equal(t, ledger.ZoneExpunged, z.Disposition)
	assert.Equal(t, uint64(4), z.ExpungedAsOf)
	assert.True(t, z.ReadyForCleanup)
	require.NotNil(t, z.ReadyAt)
	require.NotNil(t, z.CompletedAt)
	assert.Equal(t, r.nexusB, z.SagaNewOwner)
	assert.True(t, z.ReadyAt.After(removedAt), "ready_for_cleanup only after the zone was really removed")
	moved, err := env.Store.ReassignedSagas(ctx, r.nexusA)
	require.NoError(t, err)
	assert.Equal(t, len(moved), z.SagasMoved)
	assert.Equal(t, len(moved), res.SagasMoved)
	require.NotEmpty(t, moved, "A held unfinished sagas when it was expunged")
	ids := make([]string, len(moved))
	for i, id := range moved {
		ids[i] = id.String()
	}
	assert.Zero(t, qcount(t, db, `SELECT count(*) FROM omicron.saga WHERE id = ANY($1::uuid[]) AND (adopt_time IS NULL OR adopt_time <= $2 OR adopt_generation < 2)`,
		pq.Array(ids), *z.ReadyAt), "a saga was reassigned before the inventory proof")

	// B adopts and finishes them; nothing lost, nothing run twice.
	require.Eventually(t, func() bool {
		return qcount(t, db, `SELECT count(*) FROM omicron.saga WHERE id = ANY($1::uuid[]) AND saga_state = 'done'`, pq.Array(ids)) == len(ids)
	}, 15*time.Second, 50*time.Millisecond, "moved sagas finish on the new owner")
	for _, ev := range []string{"adopt", "finish"} {
		assert.Equal(t, len(ids), qcount(t, db, `SELECT count(*) FROM fleetsim.saga_history
			WHERE saga_id = ANY($1::uuid[]) AND sec = $2 AND event = $3`, pq.Array(ids), r.nexusB, ev), "each moved saga: one %s by B", ev)
	}
	assert.Zero(t, qcount(t, db, `SELECT count(*) FROM (SELECT saga_id FROM fleetsim.saga_history
		WHERE event IN ('claim', 'finish') GROUP BY saga_id, event HAVING count(*) > 1) d`), "a saga claimed or finished twice")
	assert.Zero(t, qcount(t, db, `SELECT count(*) FROM omicron.saga s WHERE EXISTS (
		SELECT 1 FROM fleetsim.saga_history h WHERE h.saga_id = s.id AND h.sec = $1 AND h.event = 'claim')
		AND s.saga_state <> 'done' AND s.current_sec IS DISTINCT FROM $2`, r.nexusA, r.nexusB), "a saga of A was lost")

	// The attempt ended completed, with its steps in the event log.
	a, err := env.Store.Get(ctx, res.AttemptID)
	require.NoError(t, err)
	assert.Equal(t, ledger.StateCompleted, a.State)
	assert.Equal(t, zoneexpunge.ZoneOutcomeExpunged, a.Outcome)
	events, err := env.Store.Events(ctx, res.AttemptID)
	require.NoError(t, err)
	var steps []string
	for _, e := range events {
		steps = append(steps, e.Step)
	}
	for _, want := range []string{"intent", "zone.expunged", "zone.config.4", "zone.ready_for_cleanup", "zone.committed", "finish"} {
		assert.Contains(t, steps, want)
	}
}

// The race the gate prevents: zone removal fails for the first N
// attempts, the still-running Nexus keeps claiming sagas meanwhile, and the
// workflow reassigns only once inventory proves the zone gone. In both
// sled-agent modes: today's sled-agent ledgers at once and the removal
// fails in the background (the workflow waits in the inventory proof); the
// opt-in one fails the PUT (the workflow retries it).
func TestZoneExpungeNexusRaceAgainstFleetsim(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	for _, mode := range zxModes {
		t.Run(mode, func(t *testing.T) { testZoneExpungeNexusRace(t, mode) })
	}
}

func testZoneExpungeNexusRace(t *testing.T, mode string) {
	env := testenv.New(t)
	r := newZXRack(t, 4, mode)
	sim := env.StartFleetsim(r.spec)
	env.StartWorker(workerapp.Deps{Fleet: r.endpoints(env, sim)})
	require.Eventually(t, func() bool { return nexusOf(sledTruth(t, sim), r.nexusA).SagasClaimed >= 5 },
		10*time.Second, 10*time.Millisecond)

	// Watch A's claims while its removal keeps failing.
	var mu sync.Mutex
	claimedAt := map[int]int64{} // removal attempts -> A's claims when first seen
	stopWatch := make(chan struct{})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(5 * time.Millisecond):
			}
			tr := sim.Truth()[sled.Name].(sled.Truth)
			n := sledOf(tr, r.sledA).RemovalAttempts[r.nexusA]
			mu.Lock()
			if _, seen := claimedAt[n]; !seen {
				claimedAt[n] = nexusOf(tr, r.nexusA).SagasClaimed
			}
			mu.Unlock()
		}
	}()

	run := startZoneExpunge(t, env, r.input())
	// While the removal fails, the workflow is stuck in step 3 (opt-in: the
	// PUT fails) or 4 (today's: the PUT succeeded, inventory shows the
	// failure) and has not moved a single saga.
	require.Eventually(t, func() bool {
		return sledOf(sledTruth(t, sim), r.sledA).RemovalAttempts[r.nexusA] >= 2
	}, 20*time.Second, 10*time.Millisecond)
	v, err := env.Client.QueryWorkflow(context.Background(), run.GetID(), run.GetRunID(), workflows.ProgressQuery)
	require.NoError(t, err)
	var p zoneexpunge.ZoneExpungeProgress
	require.NoError(t, v.Get(&p))
	stuckIn := zoneexpunge.ZonePhaseAwaitingInventory
	if mode == spec.SledAgentRemoveBeforeLedger {
		stuckIn = zoneexpunge.ZonePhaseRemovingZone
	}
	assert.Equal(t, stuckIn, p.Phase)
	moved, err := env.Store.ReassignedSagas(context.Background(), r.nexusA)
	require.NoError(t, err)
	assert.Empty(t, moved, "no reassignment before the inventory proof")

	var res zoneexpunge.ZoneExpungeResult
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	require.NoError(t, run.Get(ctx, &res))
	close(stopWatch)
	<-watchDone

	mu.Lock()
	first, firstOK := claimedAt[1]
	last, lastOK := claimedAt[r.removalErr]
	mu.Unlock()
	require.True(t, firstOK && lastOK, "watcher saw the removal attempts: %v", claimedAt)
	assert.Greater(t, last, first, "the Nexus whose removal failed kept claiming sagas")
	if mode == spec.SledAgentRemoveBeforeLedger {
		assert.GreaterOrEqual(t, res.PutAttempts, r.removalErr+1)
		replay.Record(t, env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/zone-expunge-nexus-race.json")
	} else {
		assert.Equal(t, 1, res.PutAttempts, "today's sled-agent ledgers the first PUT")
		replay.Record(t, env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/zone-expunge-nexus-race-ledger-first.json")
	}
	checkExpungeOutcome(t, env, sim, r, res)

	// Running it again for the same zone finds it done.
	again := startZoneExpunge(t, env, r.input())
	var res2 zoneexpunge.ZoneExpungeResult
	require.NoError(t, again.Get(ctx, &res2))
	assert.Equal(t, zoneexpunge.ZoneOutcomeAlreadyExpunged, res2.Outcome)
	assert.Equal(t, res.SagasMoved, res2.SagasMoved)
}

// Killing the worker at arbitrary points (between and inside steps) and
// starting another finishes the expunge with the same outcome.
func TestZoneExpungeSurvivesWorkerRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	for _, mode := range zxModes {
		t.Run(mode, func(t *testing.T) { testZoneExpungeSurvivesWorkerRestarts(t, mode) })
	}
}

func testZoneExpungeSurvivesWorkerRestarts(t *testing.T, mode string) {
	env := testenv.New(t)
	r := newZXRack(t, 3, mode)
	sim := env.StartFleetsim(r.spec)
	deps := workerapp.Deps{Fleet: r.endpoints(env, sim)}
	require.Eventually(t, func() bool { return nexusOf(sledTruth(t, sim), r.nexusA).SagasClaimed >= 5 },
		10*time.Second, 10*time.Millisecond)

	run := startZoneExpunge(t, env, r.input())
	done := make(chan error, 1)
	var res zoneexpunge.ZoneExpungeResult
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		done <- run.Get(ctx, &res)
	}()
	// Kill the worker each time the workflow enters a new phase: the step
	// before has completed and the next is scheduled, so every kill lands
	// between two steps (or inside a slow one).
	phases := map[workflows.Phase]bool{}
	kills := 0
	var last workflows.Phase
	stop := env.StartWorker(deps)
	for {
		select {
		case err := <-done:
			stop()
			require.NoError(t, err)
			t.Logf("worker killed %d times, at phases %v", kills, phases)
			assert.GreaterOrEqual(t, kills, 4)
			assert.True(t, phases[zoneexpunge.ZonePhaseRemovingZone] || phases[zoneexpunge.ZonePhaseAwaitingInventory],
				"killed while the zone was being removed")
			checkExpungeOutcome(t, env, sim, r, res)
			return
		case <-time.After(5 * time.Millisecond):
		}
		qctx, qcancel := context.WithTimeout(context.Background(), time.Second)
		v, err := env.Client.QueryWorkflow(qctx, run.GetID(), run.GetRunID(), workflows.ProgressQuery)
		qcancel()
		var p zoneexpunge.ZoneExpungeProgress
		if err != nil || v.Get(&p) != nil || p.Phase == last || p.Phase == "" || p.Phase == zoneexpunge.ZonePhaseDone {
			continue
		}
		last = p.Phase
		phases[last] = true
		stop()
		kills++
		stop = env.StartWorker(deps)
	}
}

// A gap chaos found: the operator cancels a Nexus expunge after the
// sled ledgered the config without the zone (today's sled-agent: the PUT
// is ledgered at once, the removal fails in the background and the
// workflow waits for the inventory proof). The expunge is never undone, so
// the cancel does not strand A's sagas: the proof, the saga move and the
// commit still run, and the update ends completed, saying the cancel came
// too late. Recorded: the cancel path's history.
func TestZoneExpungeCancelledAfterRemovalStillMovesTheSagas(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	env := testenv.New(t)
	r := newZXRack(t, 0, spec.SledAgentLedgerFirst)
	sim := env.StartFleetsim(r.spec)
	// The removal fails until the cancel is sent, so a slow query cannot
	// miss the proof wait.
	fid, err := sim.Env.Faults.Arm(faults.Fault{Kind: faults.ZoneRemovalFailure, Target: "zone/" + r.nexusA.String()})
	require.NoError(t, err)
	env.StartWorker(workerapp.Deps{Fleet: r.endpoints(env, sim)})
	require.Eventually(t, func() bool { return nexusOf(sledTruth(t, sim), r.nexusA).SagasClaimed >= 5 },
		10*time.Second, 10*time.Millisecond)

	run := startZoneExpunge(t, env, r.input())
	require.Eventually(t, func() bool {
		v, err := env.Client.QueryWorkflow(context.Background(), run.GetID(), run.GetRunID(), workflows.ProgressQuery)
		var p zoneexpunge.ZoneExpungeProgress
		return err == nil && v.Get(&p) == nil && p.Phase == zoneexpunge.ZonePhaseAwaitingInventory
	}, 20*time.Second, 10*time.Millisecond, "the sled ledgered the config; the proof waits out the failing removal")
	require.NoError(t, env.Client.CancelWorkflow(context.Background(), run.GetID(), run.GetRunID()))
	require.True(t, sim.Env.Faults.Clear(fid))
	r.removalErr = removalFailures(sim, fid)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var res zoneexpunge.ZoneExpungeResult
	require.NoError(t, run.Get(ctx, &res), "an expunge past the removal ends completed")
	assert.True(t, res.CancelIgnored)
	checkExpungeOutcome(t, env, sim, r, res)
	replay.Record(t, env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/zone-expunge-cancel-after-removal.json")
}

// An operator resets a Nexus zone expunge while it waits for inventory to
// prove the zone gone (today's sled-agent: the removal keeps failing in the
// background), to each point. The reset run takes its own attempt and
// disposition over and finishes: the zone gone, every saga of the expunged
// Nexus reassigned after the proof and finished by the other Nexus, the
// attempt completed (before: the reset run refused itself, TargetBusy, and
// left the sagas on the expunged Nexus).
func TestZoneExpungeResetWhileAwaitingProof(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	for _, p := range testenv.ResetPoints {
		t.Run(string(p), func(t *testing.T) {
			env := testenv.New(t)
			r := newZXRack(t, 4, spec.SledAgentLedgerFirst)
			sim := env.StartFleetsim(r.spec)
			env.StartWorker(workerapp.Deps{Fleet: r.endpoints(env, sim)})
			run := startZoneExpunge(t, env, r.input())
			require.Eventually(t, func() bool {
				return sledOf(sledTruth(t, sim), r.sledA).RemovalAttempts[r.nexusA] >= 2
			}, 20*time.Second, 10*time.Millisecond)
			reset := testenv.ResetWorkflow(t, env.Client, run.GetID(), p)

			var res zoneexpunge.ZoneExpungeResult
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			require.NoError(t, reset.Get(ctx, &res))
			checkExpungeOutcome(t, env, sim, r, res)
			active, err := env.Store.ActiveForTarget(ctx, r.input().Target())
			require.NoError(t, err)
			assert.Nil(t, active, "an attempt is left active on the zone")
		})
	}
}
