package zoneexpunge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/nexusdb"
	"github.com/fleetsaga/fleetsaga/fleet/nexuslockstep"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/nexus"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
)

func nexusTruth(t *testing.T, sim *fleetsim.Server) nexus.RackTruth {
	t.Helper()
	tr, ok := sim.Truth()[nexus.Name].(nexus.Truth)
	require.True(t, ok)
	require.Len(t, tr.Racks, 1)
	return tr.Racks[0]
}

// With Nexus's executor running (the target blueprint enabled),
// a Nexus zone expunge goes through the owner: a child of the target with
// the zone expunged becomes the target, Nexus removes the zone, marks it
// ready for cleanup and moves its sagas to the Nexus of its generation;
// fleetsaga proves all of it before its ledger commits, never writes the
// config or the saga table, and the zone never comes back through a later
// blueprint.
func TestZoneExpungeThroughNexusOwner(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	env := testenv.New(t)
	r := newZXRack(t, 2, spec.SledAgentLedgerFirst)
	r.spec.Racks[0].Owners = spec.RackOwners{} // today's rack: every owner on
	require.NoError(t, r.spec.Validate())
	sim := env.StartFleetsim(r.spec)
	env.StartWorker(workerapp.Deps{Fleet: r.endpoints(env, sim)})
	require.Eventually(t, func() bool { return nexusOf(sledTruth(t, sim), r.nexusA).SagasClaimed >= 5 },
		10*time.Second, 10*time.Millisecond)
	first := nexusTruth(t, sim).Target.TargetID

	// The dry run names the owner and the mode.
	za := zoneexpunge.NewZoneActivities(env.Store, r.endpoints(env, sim), nil, "test")
	row, err := za.PlanZoneExpunge(context.Background(), zoneexpunge.ZonePrecheckInput{UpdateID: "dry", Sled: r.sledA, Zone: r.nexusA})
	require.NoError(t, err)
	assert.Contains(t, row.Reason, "mode owner (through target blueprint "+first.String()+")")
	assert.Contains(t, row.Reason, "Nexus moves its sagas to another Nexus of that generation")

	in := r.input()
	in.Timing.OwnerTimeout = 2 * time.Minute
	run := startZoneExpunge(t, env, in)
	var res zoneexpunge.ZoneExpungeResult
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, &res))
	replay.Record(t, env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/zone-expunge-through-nexus-owner.json")

	assert.Equal(t, zoneexpunge.ZoneOutcomeExpunged, res.Outcome)
	assert.Equal(t, zoneexpunge.ModeOwner, res.Mode)
	assert.Contains(t, res.ModeReason, "enabled target blueprint "+first.String())
	assert.Equal(t, uint64(4), res.ExpungedAsOf)
	assert.Equal(t, r.nexusB, res.NewOwner, "Nexus moved the sagas to the other Nexus of generation 1")
	assert.Zero(t, res.PutAttempts, "fleetsaga wrote no sled config")

	// Nexus did the work: the sled took the executor's push, the planner
	// marked the zone ready, the executor moved the sagas.
	nt := nexusTruth(t, sim)
	require.NotEmpty(t, nt.Sagas, "Nexus reassigned the sagas")
	for _, s := range nt.Sagas {
		assert.Equal(t, r.nexusA, s.From)
		assert.Equal(t, r.nexusB, s.To)
		assert.Equal(t, uint64(1), s.NexusGeneration)
	}
	st := sledOf(sledTruth(t, sim), r.sledA)
	assert.GreaterOrEqual(t, st.LedgeredGeneration, uint64(4))
	_, removed := st.RemovedAt[r.nexusA]
	assert.True(t, removed)

	lc := nexuslockstep.New(sim.URL+"/nexus/"+r.spec.Racks[0].ID, nil)
	checkTarget := func() {
		t.Helper()
		tg, err := lc.Target(ctx)
		require.NoError(t, err)
		assert.True(t, tg.Enabled)
		bp, err := lc.Blueprint(ctx, tg.TargetID)
		require.NoError(t, err)
		z, ok := bp.Zone(r.sledA, r.nexusA)
		require.True(t, ok)
		assert.Equal(t, nexuslockstep.Disposition{Kind: nexuslockstep.Expunged, AsOfGeneration: 4, ReadyForCleanup: true}, z.Disposition)
	}
	checkTarget()

	// The ledger committed after the proof, with the sagas Nexus moved.
	z, err := env.Store.ZoneDisposition(ctx, r.nexusA)
	require.NoError(t, err)
	assert.Equal(t, ledger.ZoneExpunged, z.Disposition)
	assert.True(t, z.ReadyForCleanup)
	require.NotNil(t, z.CompletedAt)
	assert.Equal(t, r.nexusB, z.SagaNewOwner)
	assert.Equal(t, res.SagasMoved, z.SagasMoved)
	assert.Positive(t, z.SagasMoved, "A held unfinished sagas when it was expunged")
	events, err := env.Store.Events(ctx, res.AttemptID)
	require.NoError(t, err)
	var steps []string
	for _, e := range events {
		steps = append(steps, e.Step)
		if e.Step == "zone.expunged" {
			assert.Contains(t, e.Message, "mode owner")
		}
	}
	for _, want := range []string{"zone.expunged", "zone.blueprint", "zone.ready_for_cleanup", "zone.owner.sagas", "zone.committed"} {
		assert.Contains(t, steps, want)
	}

	// Later executor rounds and planner blueprints never bring the zone back,
	// and no saga is left on A or held by another generation.
	pushes := nt.PushCount
	require.Eventually(t, func() bool { return nexusTruth(t, sim).PushCount >= pushes+2*len(r.sleds) },
		20*time.Second, 20*time.Millisecond)
	st = sledOf(sledTruth(t, sim), r.sledA)
	assert.False(t, nexusOf(sledTruth(t, sim), r.nexusA).Running)
	ndb, err := nexusdb.Open(fleet.FleetsimNexusDB(env.DatabaseURL))
	require.NoError(t, err)
	defer ndb.Close()
	left, err := ndb.CountUnfinished(ctx, r.nexusA)
	require.NoError(t, err)
	assert.Zero(t, left)
	inv, err := sledagent.New(sledURL(t, ndb, r.sledA), nil).InventoryOf(ctx, r.sledA)
	require.NoError(t, err)
	_, back := inv.LedgeredSledConfig.Zones[r.nexusA]
	assert.False(t, back, "the zone came back")
	checkTarget()
	moved, err := env.Store.ReassignedSagas(ctx, r.nexusA)
	require.NoError(t, err)
	owners, err := ndb.SagaOwners(ctx, moved)
	require.NoError(t, err)
	for id, o := range owners {
		assert.Equal(t, r.nexusB, o.Sec, "saga %s held by a Nexus of another generation", id)
	}
}

func sledURL(t *testing.T, ndb *nexusdb.DB, id uuid.UUID) string {
	t.Helper()
	s, err := ndb.Sled(context.Background(), id)
	require.NoError(t, err)
	return s.SledAgentURL()
}

// Direct mode (no Nexus owns the sled's config): another writer
// ledgers the sled's config, zone included, at the generation fleetsaga is
// writing; the expunge stops with that reason instead of fighting it, and
// the other writer's config stands.
func TestZoneExpungeDirectStopsWhenAnotherWriterChangesTheConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	env := testenv.New(t)
	// The seed's sled-agent: the PUT fails while the removal fails, so the
	// expunge is still writing when the other writer comes.
	r := newZXRack(t, 50, spec.SledAgentRemoveBeforeLedger)
	sim := env.StartFleetsim(r.spec)
	env.StartWorker(workerapp.Deps{Fleet: r.endpoints(env, sim)})
	ndb, err := nexusdb.Open(fleet.FleetsimNexusDB(env.DatabaseURL))
	require.NoError(t, err)
	defer ndb.Close()

	run := startZoneExpunge(t, env, r.input())
	require.Eventually(t, func() bool {
		return sledOf(sledTruth(t, sim), r.sledA).RemovalAttempts[r.nexusA] >= 1
	}, 20*time.Second, 10*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	row, err := zoneexpunge.NewZoneActivities(env.Store, r.endpoints(env, sim), nil, "test").PlanZoneExpunge(ctx,
		zoneexpunge.ZonePrecheckInput{UpdateID: "dry", Sled: r.sledA, Zone: r.nexusA})
	require.NoError(t, err)
	assert.Contains(t, row.Reason, "mode direct (fleetsaga writes the sled's config): direct mode is configured")
	other := sledagent.New(sledURL(t, ndb, r.sledA), nil)
	inv, err := other.InventoryOf(ctx, r.sledA)
	require.NoError(t, err)
	cfg := *inv.LedgeredSledConfig
	cfg.Generation = 4
	require.NoError(t, other.PutOmicronConfig(ctx, cfg), "the other writer's config, zone A still in")

	var res zoneexpunge.ZoneExpungeResult
	err = run.Get(ctx, &res)
	require.Error(t, err)
	replay.Record(t, env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/zone-expunge-direct-config-changed.json")
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	assert.Equal(t, failure.ConfigChangedUnderExpunge, app.Type())
	assert.Contains(t, app.Error(), "another writer changed sled "+r.sledA.String()+"'s config")

	st := sledOf(sledTruth(t, sim), r.sledA)
	assert.Equal(t, uint64(4), st.LedgeredGeneration, "the other writer's config stands")
	assert.True(t, nexusOf(sledTruth(t, sim), r.nexusA).Running, "zone A was not removed behind the other writer")
	moved, err := env.Store.ReassignedSagas(ctx, r.nexusA)
	require.NoError(t, err)
	assert.Empty(t, moved, "no saga moved without the proof")
	active, err := env.Store.ActiveForTarget(ctx, r.input().Target())
	require.NoError(t, err)
	assert.Nil(t, active, "the attempt ended")
}
