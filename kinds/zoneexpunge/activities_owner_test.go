package zoneexpunge

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/nexuslockstep"
	"github.com/fleetsaga/fleetsaga/fleet/openapi"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// interloper runs before the first POST /deployment/blueprints/target the
// activity sends: another writer (Nexus's planner, an operator) moves the
// target on in between the activity's read and its set.
type interloper struct {
	base http.RoundTripper
	once sync.Once
	move func()
}

func (i *interloper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/deployment/blueprints/target") {
		i.once.Do(i.move)
	}
	return i.base.RoundTrip(req)
}

type ownerFixture struct {
	rack   spec.Rack
	url    string
	lc     *nexuslockstep.Client
	za     *ZoneActivities
	env    *testsuite.TestActivityEnvironment
	sled   uuid.UUID
	zone   uuid.UUID
	moveFn func()
}

func newOwnerFixture(t *testing.T) *ownerFixture {
	rack := spec.SampleRack("r", []string{"internal_ntp", "nexus"}, []string{"nexus", "crucible"})
	rack.Owners = spec.RackOwners{Executor: spec.Off(), MGSUpdates: spec.Off()} // the test plays the executor
	s := &spec.Spec{Seed: 1, SpeedUp: 100, Timings: spec.DefaultTimings(), Racks: []spec.Rack{rack}}
	require.NoError(t, s.Validate())
	srv, err := fleetsim.Start(context.Background(), fleetsim.Env{Spec: s, Faults: faults.NewRegistry(1), Log: zerolog.Nop()}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	f := &ownerFixture{rack: rack, url: srv.URL + "/nexus/r", sled: rack.Sleds[0].ID, zone: rack.Sleds[0].Zones[1].ID}
	checked := &openapi.Transport{Contract: openapi.MustLoad(openapi.NexusLockstep), Prefix: "/nexus/r", Rep: t, Responses: true}
	f.lc = nexuslockstep.New(f.url, &http.Client{Transport: checked})
	hc := &http.Client{Transport: &interloper{base: checked, move: func() {
		if f.moveFn != nil {
			f.moveFn()
		}
	}}, Timeout: 10 * time.Second}
	f.za = &ZoneActivities{Fleet: fleet.Endpoints{NexusLockstep: f.url}, HTTP: hc}
	var suite testsuite.WorkflowTestSuite
	f.env = suite.NewTestActivityEnvironment()
	f.env.RegisterActivity(f.za)
	return f
}

// makeTarget makes a child of the current target, expunging zone of sled
// as of gen, the target (another writer's change).
func (f *ownerFixture) makeTarget(t *testing.T, sled, zone uuid.UUID, gen uint64) uuid.UUID {
	ctx := context.Background()
	tg, err := f.lc.Target(ctx)
	require.NoError(t, err)
	bp, err := f.lc.Blueprint(ctx, tg.TargetID)
	require.NoError(t, err)
	child, err := bp.ChildExpunging(uuid.New(), sled, zone, gen, "someone else", "", time.Now())
	require.NoError(t, err)
	require.NoError(t, f.lc.Import(ctx, child))
	_, err = f.lc.SetTarget(ctx, child.ID, true)
	require.NoError(t, err)
	return child.ID
}

// expunge runs the activity (no attempt: no ledger events).
func (f *ownerFixture) expunge(asOf uint64) (ZoneBlueprintResult, error) {
	var res ZoneBlueprintResult
	v, err := f.env.ExecuteActivity(f.za.ExpungeThroughBlueprint, ZoneBlueprintInput{Sled: f.sled, Zone: f.zone, ExpungedAsOf: asOf})
	if err == nil {
		err = v.Get(&res)
	}
	return res, err
}

// A target that moves between the read and the set is rebased onto: the
// expunge becomes a child of the other writer's target, whose change
// stays (never overwritten).
func TestExpungeThroughBlueprintRebasesWhenTheTargetMoves(t *testing.T) {
	f := newOwnerFixture(t)
	other := f.rack.Sleds[1]
	var theirs uuid.UUID
	f.moveFn = func() { theirs = f.makeTarget(t, other.ID, other.Zones[1].ID, 4) }
	res, err := f.expunge(4)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Rebases)
	ctx := context.Background()
	tg, err := f.lc.Target(ctx)
	require.NoError(t, err)
	assert.Equal(t, res.TargetID, tg.TargetID)
	bp, err := f.lc.Blueprint(ctx, tg.TargetID)
	require.NoError(t, err)
	assert.Equal(t, theirs, *bp.ParentBlueprintID, "a child of the target that moved")
	z, _ := bp.Zone(f.sled, f.zone)
	assert.Equal(t, nexuslockstep.Disposition{Kind: nexuslockstep.Expunged, AsOfGeneration: 4}, z.Disposition)
	z, _ = bp.Zone(other.ID, other.Zones[1].ID)
	assert.Equal(t, nexuslockstep.Expunged, z.Disposition.Kind, "the other writer's change stays")

	again, err := f.expunge(4)
	require.NoError(t, err, "a retry finds its expunge in the target")
	assert.Equal(t, res.TargetID, again.TargetID)
}

// A target that moved the sled to the expunge's generation with the zone in
// service is a StaleGeneration (the workflow rebases the ledger past it).
func TestExpungeThroughBlueprintStaleWhenTheTargetPassedTheGeneration(t *testing.T) {
	f := newOwnerFixture(t)
	f.moveFn = func() { f.makeTarget(t, f.sled, f.rack.Sleds[0].Zones[0].ID, 4) }
	_, err := f.expunge(4)
	require.Error(t, err)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app))
	assert.Equal(t, failure.StaleGeneration, app.Type())
	var gen uint64
	require.NoError(t, app.Details(&gen))
	assert.Equal(t, uint64(4), gen)
}

// A disabled target is not written behind: the expunge is refused with the
// reason.
func TestExpungeThroughBlueprintRefusesADisabledTarget(t *testing.T) {
	f := newOwnerFixture(t)
	ctx := context.Background()
	tg, err := f.lc.Target(ctx)
	require.NoError(t, err)
	_, err = f.lc.SetTargetEnabled(ctx, tg.TargetID, false)
	require.NoError(t, err)
	_, err = f.expunge(4)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	assert.Equal(t, failure.TargetDisabled, app.Type())
	assert.Contains(t, app.Error(), "is disabled")
}
