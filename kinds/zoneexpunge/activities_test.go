package zoneexpunge_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// zoneFixture: sled 0 runs ntp + Nexus A, sled 1 runs Nexus B, all at
// generation 3, against fleetsim and a fresh ledger.
type zoneFixture struct {
	env      *testenv.Env
	sim      *fleetsim.Server
	acts     *zoneexpunge.ZoneActivities
	tenv     *testsuite.TestActivityEnvironment
	sleds    []uuid.UUID
	ntp      uuid.UUID
	nexusA   uuid.UUID
	nexusB   uuid.UUID
	attempt  uuid.UUID
	updateID string
}

func newZoneFixture(t *testing.T, nexusOnSled1 bool) *zoneFixture {
	return newZoneFixtureMode(t, nexusOnSled1, "")
}

// newZoneFixtureMode is newZoneFixture with the rack's sled-agent mode.
func newZoneFixtureMode(t *testing.T, nexusOnSled1 bool, mode string) *zoneFixture {
	env := testenv.New(t)
	f := &zoneFixture{env: env, ntp: uuid.New(), nexusA: uuid.New(), nexusB: uuid.New()}
	s := &spec.Spec{Seed: 3, SpeedUp: 100, Timings: spec.DefaultTimings()}
	rack := spec.Rack{ID: "r", MGSSleds: []int{0, 1}, SledAgentMode: mode, Owners: spec.NoOwners()} // direct mode
	zones := [][]spec.Zone{{{ID: f.ntp, Kind: "internal_ntp"}, {ID: f.nexusA, Kind: "nexus"}}, {}}
	if nexusOnSled1 {
		zones[1] = []spec.Zone{{ID: f.nexusB, Kind: "nexus"}}
	}
	for i, zs := range zones {
		sl := spec.Sled{ID: uuid.New(), Cubby: i, Serial: fmt.Sprintf("S%d", i), SP: spec.SPFirmware{Active: "1"}, Generation: 3, Zones: zs}
		rack.Sleds = append(rack.Sleds, sl)
		f.sleds = append(f.sleds, sl.ID)
	}
	s.Racks = []spec.Rack{rack}
	require.NoError(t, s.Validate())
	f.sim = env.StartFleetsim(s)
	ep := env.Endpoints(f.sim)
	ep.DirectMode, ep.NexusLockstep = true, "" // the rack has no Nexus
	f.acts = zoneexpunge.NewZoneActivities(env.Store, ep, &http.Client{Timeout: 10 * time.Second}, "test")
	var suite testsuite.WorkflowTestSuite
	f.tenv = suite.NewTestActivityEnvironment()
	f.tenv.RegisterActivity(f.acts)
	f.updateID = "fleetsaga/zone-expunge/zone/" + f.nexusA.String()
	return f
}

func (f *zoneFixture) recordAttempt(t *testing.T, zone uuid.UUID) {
	f.attempt = uuid.New()
	require.NoError(t, f.env.Store.RecordIntent(context.Background(), ledger.Attempt{ID: f.attempt, UpdateID: f.updateID, Attempt: 1,
		Kind: "zone-expunge", Target: "zone/" + zone.String(), WorkflowID: f.updateID, RunID: "r"}))
}

func (f *zoneFixture) expunge(t *testing.T, zone uuid.UUID, asOf uint64) {
	f.recordAttempt(t, zone)
	_, err := f.env.Store.RecordZoneExpunge(context.Background(), ledger.ExpungeIntent{
		ZoneID: zone, SledID: f.sleds[0], Kind: "nexus", ExpungedAsOf: asOf, AttemptID: f.attempt})
	require.NoError(t, err)
}

func (f *zoneFixture) sledClient() *sledagent.Client {
	return f.sledClientOf(0)
}

// sledClientOf talks to sled i's sled-agent at the address fleetsim
// recorded in Nexus's sled table.
func (f *zoneFixture) sledClientOf(i int) *sledagent.Client {
	for _, st := range f.sim.Truth()[sled.Name].(sled.Truth).Sleds {
		if st.ID == f.sleds[i] {
			return sledagent.New("http://"+st.Address, nil)
		}
	}
	panic("no such sled")
}

func (f *zoneFixture) arm(t *testing.T, fault faults.Fault) {
	_, err := f.sim.Env.Faults.Arm(fault)
	require.NoError(t, err)
}

func appErrType(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type()
	}
	return ""
}

func TestPrecheckZoneExpunge(t *testing.T) {
	f := newZoneFixture(t, true)
	run := func(in zoneexpunge.ZonePrecheckInput) (zoneexpunge.ZonePrecheck, error) {
		in.UpdateID = f.updateID
		v, err := f.tenv.ExecuteActivity(f.acts.PrecheckZoneExpunge, in)
		var out zoneexpunge.ZonePrecheck
		if err == nil {
			require.NoError(t, v.Get(&out))
		}
		return out, err
	}

	pre, err := run(zoneexpunge.ZonePrecheckInput{Sled: f.sleds[0], Zone: f.nexusA, RackSleds: f.sleds})
	require.NoError(t, err)
	assert.Equal(t, "nexus", pre.Kind)
	assert.Equal(t, uint64(3), pre.LedgeredGeneration)
	assert.True(t, pre.InConfig)
	assert.True(t, pre.Present)
	assert.Nil(t, pre.Existing)
	assert.Equal(t, 1, pre.NextAttempt)
	assert.Equal(t, []uuid.UUID{f.nexusB}, pre.OtherNexus)

	pre, err = run(zoneexpunge.ZonePrecheckInput{Sled: f.sleds[0], Zone: f.ntp})
	require.NoError(t, err)
	assert.Equal(t, "internal_ntp", pre.Kind)

	_, err = run(zoneexpunge.ZonePrecheckInput{Sled: uuid.New(), Zone: f.nexusA})
	assert.Equal(t, failure.SledNotFound, appErrType(err), "%v", err)
	_, err = run(zoneexpunge.ZonePrecheckInput{Sled: f.sleds[0], Zone: uuid.New()})
	assert.Equal(t, failure.ZoneNotFound, appErrType(err), "%v", err)
	_, err = run(zoneexpunge.ZonePrecheckInput{Sled: f.sleds[1], Zone: f.nexusA})
	assert.Equal(t, failure.ZoneNotFound, appErrType(err), "zone on another sled: %v", err)
	// No rackSleds typed by hand: the rack's sleds come from Nexus's sled table.
	pre, err = run(zoneexpunge.ZonePrecheckInput{Sled: f.sleds[0], Zone: f.nexusA})
	require.NoError(t, err)
	assert.Equal(t, []uuid.UUID{f.nexusB}, pre.OtherNexus)

	// Already expunged: resume, even though B's own expunge would be refused.
	f.expunge(t, f.nexusA, 4)
	pre, err = run(zoneexpunge.ZonePrecheckInput{Sled: f.sleds[0], Zone: f.nexusA, RackSleds: f.sleds})
	require.NoError(t, err)
	require.NotNil(t, pre.Existing)
	assert.Equal(t, uint64(4), pre.Existing.ExpungedAsOf)
	require.NotNil(t, pre.ActiveAttempt)
	assert.Equal(t, f.attempt, pre.ActiveAttempt.ID)
	assert.Equal(t, 2, pre.NextAttempt)
	_, err = run(zoneexpunge.ZonePrecheckInput{Sled: f.sleds[1], Zone: f.nexusB, RackSleds: f.sleds})
	assert.Equal(t, failure.LastNexusZone, appErrType(err), "A is expunged, so B is the last: %v", err)
}

// Opt-in mode: the PUT fails while the removal fails; it is retried.
func TestPutConfigWithoutZoneRetriesThroughRemovalFailures(t *testing.T) {
	f := newZoneFixtureMode(t, true, spec.SledAgentRemoveBeforeLedger)
	f.expunge(t, f.nexusA, 4)
	f.arm(t, faults.Fault{Kind: faults.ZoneRemovalFailure, Target: "zone/" + f.nexusA.String(), Times: 2})
	in := zoneexpunge.ZonePutInput{AttemptID: f.attempt, Sled: f.sleds[0], Zone: f.nexusA, ExpungedAsOf: 4,
		Deadline: time.Now().Add(time.Minute), RetryInitial: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond}
	v, err := f.tenv.ExecuteActivity(f.acts.PutConfigWithoutZone, in)
	require.NoError(t, err)
	var res zoneexpunge.ZonePutResult
	require.NoError(t, v.Get(&res))
	assert.Equal(t, 3, res.Attempts)
	assert.Equal(t, uint64(4), res.LedgeredGeneration)
	assert.Contains(t, res.LastError, "ZoneRemovalFailed")
	inv, err := f.sledClient().Inventory(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(4), inv.LedgeredGeneration())
	_, kept := inv.LedgeredSledConfig.Zones[f.ntp]
	assert.True(t, kept, "only the expunged zone is left out")

	// Again (a retried activity): already done, no PUT.
	v, err = f.tenv.ExecuteActivity(f.acts.PutConfigWithoutZone, in)
	require.NoError(t, err)
	require.NoError(t, v.Get(&res))
	assert.Equal(t, 0, res.Attempts)
}

func TestPutConfigWithoutZoneGivesUpAtDeadline(t *testing.T) {
	f := newZoneFixtureMode(t, true, spec.SledAgentRemoveBeforeLedger)
	f.expunge(t, f.nexusA, 4)
	f.arm(t, faults.Fault{Kind: faults.ZoneRemovalFailure, Target: "zone/" + f.nexusA.String()}) // until cleared
	_, err := f.tenv.ExecuteActivity(f.acts.PutConfigWithoutZone, zoneexpunge.ZonePutInput{AttemptID: f.attempt, Sled: f.sleds[0],
		Zone: f.nexusA, ExpungedAsOf: 4, Deadline: time.Now().Add(400 * time.Millisecond), RetryInitial: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	require.Error(t, err)
	assert.Equal(t, failure.ZoneRemovalTimedOut, appErrType(err), "%v", err)
	assert.Contains(t, err.Error(), "resumed")
	inv, err := f.sledClient().Inventory(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(3), inv.LedgeredGeneration(), "the sled kept its old ledger")
}

// Someone else ledgered generation 5 with the zone still in: rebase.
func TestPutConfigWithoutZoneReportsStaleGeneration(t *testing.T) {
	f := newZoneFixture(t, true)
	f.expunge(t, f.nexusA, 4)
	c := f.sledClient()
	inv, err := c.Inventory(context.Background())
	require.NoError(t, err)
	other := inv.LedgeredSledConfig.Clone()
	other.Generation = 5
	require.NoError(t, c.PutOmicronConfig(context.Background(), other))

	_, err = f.tenv.ExecuteActivity(f.acts.PutConfigWithoutZone, zoneexpunge.ZonePutInput{AttemptID: f.attempt, Sled: f.sleds[0],
		Zone: f.nexusA, ExpungedAsOf: 4, Deadline: time.Now().Add(time.Minute), RetryInitial: 20 * time.Millisecond})
	require.Error(t, err)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, failure.StaleGeneration, app.Type())
	var gen uint64
	require.NoError(t, app.Details(&gen))
	assert.Equal(t, uint64(5), gen)
	inv, err = c.Inventory(context.Background())
	require.NoError(t, err)
	_, still := inv.LedgeredSledConfig.Zones[f.nexusA]
	assert.True(t, still, "nothing overwritten")

	// After the rebase to 6, the PUT goes through.
	_, err = f.tenv.ExecuteActivity(f.acts.RebaseZoneExpunge, zoneexpunge.ZoneRebaseInput{AttemptID: f.attempt, Zone: f.nexusA, From: 4, To: 6})
	require.NoError(t, err)
	_, err = f.tenv.ExecuteActivity(f.acts.PutConfigWithoutZone, zoneexpunge.ZonePutInput{AttemptID: f.attempt, Sled: f.sleds[0],
		Zone: f.nexusA, ExpungedAsOf: 6, Deadline: time.Now().Add(time.Minute), RetryInitial: 20 * time.Millisecond})
	require.NoError(t, err)
}

func TestAwaitZoneGoneAndTheGate(t *testing.T) {
	f := newZoneFixture(t, true)
	f.expunge(t, f.nexusA, 4)

	// Before the PUT: no proof, and the reassignment refuses to run.
	_, err := f.tenv.ExecuteActivity(f.acts.AwaitZoneGone, zoneexpunge.ZoneGoneInput{AttemptID: f.attempt, Sled: f.sleds[0],
		Zone: f.nexusA, ExpungedAsOf: 4, Deadline: time.Now().Add(200 * time.Millisecond), PollInterval: 20 * time.Millisecond})
	assert.Equal(t, failure.InventoryProofTimedOut, appErrType(err), "%v", err)
	_, err = f.tenv.ExecuteActivity(f.acts.ReassignNexusSagas, zoneexpunge.ZoneReassignInput{AttemptID: f.attempt, Zone: f.nexusA, NewOwner: f.nexusB})
	assert.Equal(t, failure.GateNotProven, appErrType(err), "%v", err)
	_, err = f.tenv.ExecuteActivity(f.acts.CommitZoneExpunge, zoneexpunge.ZoneCommitInput{AttemptID: f.attempt, Zone: f.nexusA})
	assert.Equal(t, failure.GateNotProven, appErrType(err), "%v", err)

	require.NoError(t, f.sledClient().PutOmicronConfig(context.Background(), func() sledagent.OmicronSledConfig {
		inv, err := f.sledClient().Inventory(context.Background())
		require.NoError(t, err)
		return inv.LedgeredSledConfig.WithoutZone(4, f.nexusA)
	}()))
	v, err := f.tenv.ExecuteActivity(f.acts.AwaitZoneGone, zoneexpunge.ZoneGoneInput{AttemptID: f.attempt, Sled: f.sleds[0],
		Zone: f.nexusA, ExpungedAsOf: 4, Deadline: time.Now().Add(5 * time.Second), PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	var gone zoneexpunge.ZoneGoneResult
	require.NoError(t, v.Get(&gone))
	assert.Equal(t, uint64(4), gone.ObservedGeneration)
	z, err := f.env.Store.ZoneDisposition(context.Background(), f.nexusA)
	require.NoError(t, err)
	assert.True(t, z.ReadyForCleanup)

	// Now the sagas move, and the commit records them.
	v, err = f.tenv.ExecuteActivity(f.acts.ReassignNexusSagas, zoneexpunge.ZoneReassignInput{AttemptID: f.attempt, Zone: f.nexusA, NewOwner: f.nexusB})
	require.NoError(t, err)
	var moved zoneexpunge.ZoneReassignResult
	require.NoError(t, v.Get(&moved))
	assert.Zero(t, moved.Remaining)
	v, err = f.tenv.ExecuteActivity(f.acts.CountUnfinishedSagas, f.nexusA)
	require.NoError(t, err)
	var left int64
	require.NoError(t, v.Get(&left))
	assert.Zero(t, left)
	v, err = f.tenv.ExecuteActivity(f.acts.CommitZoneExpunge, zoneexpunge.ZoneCommitInput{AttemptID: f.attempt, Zone: f.nexusA, NewOwner: f.nexusB})
	require.NoError(t, err)
	var disp ledger.ZoneDisposition
	require.NoError(t, v.Get(&disp))
	assert.True(t, disp.Completed())
	assert.GreaterOrEqual(t, disp.SagasMoved, len(moved.Moved))
}

func TestAwaitZoneGoneDetectsReinstatedZone(t *testing.T) {
	f := newZoneFixture(t, true)
	f.expunge(t, f.nexusA, 4)
	c := f.sledClient()
	inv, err := c.Inventory(context.Background())
	require.NoError(t, err)
	back := inv.LedgeredSledConfig.Clone()
	back.Generation = 4 // someone ledgered 4 with the zone in it
	require.NoError(t, c.PutOmicronConfig(context.Background(), back))
	_, err = f.tenv.ExecuteActivity(f.acts.AwaitZoneGone, zoneexpunge.ZoneGoneInput{AttemptID: f.attempt, Sled: f.sleds[0],
		Zone: f.nexusA, ExpungedAsOf: 4, Deadline: time.Now().Add(time.Second), PollInterval: 20 * time.Millisecond})
	assert.Equal(t, failure.ZoneReinstated, appErrType(err), "%v", err)
}

func TestChooseSagaOwner(t *testing.T) {
	f := newZoneFixture(t, true)
	choose := func(in zoneexpunge.ZoneOwnerInput) (uuid.UUID, error) {
		v, err := f.tenv.ExecuteActivity(f.acts.ChooseSagaOwner, in)
		var id uuid.UUID
		if err == nil {
			require.NoError(t, v.Get(&id))
		}
		return id, err
	}
	id, err := choose(zoneexpunge.ZoneOwnerInput{Sled: f.sleds[0], Zone: f.nexusA, RackSleds: f.sleds})
	require.NoError(t, err)
	assert.Equal(t, f.nexusB, id)
	id, err = choose(zoneexpunge.ZoneOwnerInput{Sled: f.sleds[0], Zone: f.nexusA, RackSleds: f.sleds, Preferred: f.nexusB})
	require.NoError(t, err)
	assert.Equal(t, f.nexusB, id)
	// A preferred owner that is not a live Nexus gives way to one that is,
	// and the ledger says why.
	f.recordAttempt(t, f.nexusA)
	id, err = choose(zoneexpunge.ZoneOwnerInput{AttemptID: f.attempt, Sled: f.sleds[0], Zone: f.nexusA, Preferred: f.ntp})
	require.NoError(t, err)
	assert.Equal(t, f.nexusB, id)
	events, err := f.env.Store.Events(context.Background(), f.attempt)
	require.NoError(t, err)
	require.NotEmpty(t, events)
	assert.Contains(t, events[len(events)-1].Message, "chose live Nexus "+f.nexusB.String())
	id, err = choose(zoneexpunge.ZoneOwnerInput{Sled: f.sleds[0], Zone: f.nexusA})
	require.NoError(t, err, "the rack's sleds come from Nexus's sled table")
	assert.Equal(t, f.nexusB, id)

	// A Nexus being removed is not live: out of its sled's ledger (today's
	// sled-agent ledgers first), its removal failing either way.
	f.arm(t, faults.Fault{Kind: faults.ZoneRemovalFailure, Target: "zone/" + f.nexusB.String(), Times: 1})
	c := f.sledClientOf(1)
	inv, err := c.Inventory(context.Background())
	require.NoError(t, err)
	_ = c.PutOmicronConfig(context.Background(), inv.LedgeredSledConfig.WithoutZone(4, f.nexusB))
	_, err = choose(zoneexpunge.ZoneOwnerInput{Sled: f.sleds[0], Zone: f.nexusA, RackSleds: f.sleds})
	assert.Equal(t, failure.NoLiveNexus, appErrType(err))
}

func TestReassignWithoutNexusDatabase(t *testing.T) {
	f := newZoneFixture(t, true)
	f.expunge(t, f.nexusA, 4)
	_, err := f.env.Store.MarkZoneReadyForCleanup(context.Background(), f.nexusA, 4)
	require.NoError(t, err)
	acts := *f.acts
	acts.Nexus = nil
	var suite testsuite.WorkflowTestSuite
	tenv := suite.NewTestActivityEnvironment()
	tenv.RegisterActivity(&acts)
	_, err = tenv.ExecuteActivity(acts.ReassignNexusSagas, zoneexpunge.ZoneReassignInput{AttemptID: f.attempt, Zone: f.nexusA, NewOwner: f.nexusB})
	assert.Equal(t, failure.NexusDBNotConfigured, appErrType(err))
}

// Each direct write (the sled config PUT, the saga move) refuses unless
// the worker is in direct mode now, not only the precheck. A zone expunge whose precheck chose direct mode under the
// old rule (no lockstep endpoint, or a 404 from the wrong port) is still
// running when the worker is upgraded; its history replays Mode=direct and
// the workflow goes on to PutConfigWithoutZone. On a rack whose Nexus owns
// the sled configs (today's default, owners on), that PUT would be a sled
// config written behind Nexus's executor, and the saga move a move of
// sagas Nexus moves itself.
func TestDirectWritesRefusedOutsideDirectMode(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + fleetsim")
	}
	env := testenv.New(t)
	f := &zoneFixture{env: env, ntp: uuid.New(), nexusA: uuid.New(), nexusB: uuid.New()}
	// Today's rack: its Nexus on (owners on), and the worker configured as
	// a real rack's: a lockstep endpoint, no direct mode.
	s := &spec.Spec{Seed: 3, SpeedUp: 100, Timings: spec.DefaultTimings()}
	rack := spec.Rack{ID: "r", MGSSleds: []int{0, 1}}
	zones := [][]spec.Zone{{{ID: f.ntp, Kind: "internal_ntp"}, {ID: f.nexusA, Kind: "nexus"}}, {{ID: f.nexusB, Kind: "nexus"}}}
	for i, zs := range zones {
		sl := spec.Sled{ID: uuid.New(), Cubby: i, Serial: fmt.Sprintf("S%d", i), SP: spec.SPFirmware{Active: "1"}, Generation: 3, Zones: zs}
		rack.Sleds = append(rack.Sleds, sl)
		f.sleds = append(f.sleds, sl.ID)
	}
	s.Racks = []spec.Rack{rack}
	require.NoError(t, s.Validate())
	f.sim = env.StartFleetsim(s)
	f.updateID = "fleetsaga/zone-expunge/zone/" + f.nexusA.String()
	ep := env.Endpoints(f.sim)
	require.False(t, ep.DirectMode)
	require.NotEmpty(t, ep.NexusLockstep)
	acts := zoneexpunge.NewZoneActivities(env.Store, ep, &http.Client{Timeout: 10 * time.Second}, "test")
	var suite testsuite.WorkflowTestSuite
	tenv := suite.NewTestActivityEnvironment()
	tenv.RegisterActivity(acts)

	f.expunge(t, f.nexusA, 4)
	_, err := tenv.ExecuteActivity(acts.PutConfigWithoutZone, zoneexpunge.ZonePutInput{AttemptID: f.attempt, Sled: f.sleds[0],
		Zone: f.nexusA, ExpungedAsOf: 4, Deadline: time.Now().Add(20 * time.Second),
		RetryInitial: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	assert.Equal(t, failure.OwnerUnknown, appErrType(err), "direct PUT without direct mode: %v", err)
	assert.Equal(t, uint64(3), sledOf(sledTruth(t, f.sim), f.sleds[0]).LedgeredGeneration,
		"no sled config written behind Nexus")
	assert.Contains(t, err.Error(), "--direct-mode")

	ctx := context.Background()
	_, err = env.Store.MarkZoneReadyForCleanup(ctx, f.nexusA, 4)
	require.NoError(t, err)
	_, err = tenv.ExecuteActivity(acts.ReassignNexusSagas, zoneexpunge.ZoneReassignInput{AttemptID: f.attempt, Zone: f.nexusA, NewOwner: f.nexusB})
	assert.Equal(t, failure.OwnerUnknown, appErrType(err), "saga move without direct mode: %v", err)
	moved, err := env.Store.ReassignedSagas(ctx, f.nexusA)
	require.NoError(t, err)
	assert.Empty(t, moved, "no saga of A planned or moved behind Nexus")
}
