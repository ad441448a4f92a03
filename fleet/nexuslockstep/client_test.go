package nexuslockstep_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/nexuslockstep"
	"github.com/fleetsaga/fleetsaga/fleet/openapi"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// The client's traffic with fleetsim's Nexus follows the vendored lockstep
// document (requests and answers), and its errors are classified: a child
// expunging a zone is imported and made the target; a child of the old
// target is refused as "target moved"; an unknown blueprint is not found;
// what is not a lockstep API (a rack without a Nexus in fleetsim) answers
// 404 without a code.
func TestClientTrafficFollowsOpenAPI(t *testing.T) {
	ctx := context.Background()
	rack := spec.SampleRack("r", []string{"internal_ntp", "nexus"}, []string{"nexus"})
	rack.Owners = spec.RackOwners{Executor: spec.Off(), MGSUpdates: spec.Off()}
	bare := spec.SampleRack("bare")
	bare.Owners = spec.NoOwners()
	s := &spec.Spec{Seed: 1, SpeedUp: 100, Timings: spec.DefaultTimings(), Racks: []spec.Rack{rack, bare}}
	require.NoError(t, s.Validate())
	srv, err := fleetsim.Start(ctx, fleetsim.Env{Spec: s, Faults: faults.NewRegistry(1), Log: zerolog.Nop()}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	tr := &openapi.Transport{Contract: openapi.MustLoad(openapi.NexusLockstep), Prefix: "/nexus/r", Rep: t, Responses: true}
	c := nexuslockstep.New(srv.URL+"/nexus/r", &http.Client{Transport: tr, Timeout: 10 * time.Second})

	target, err := c.Target(ctx)
	require.NoError(t, err)
	assert.True(t, target.Enabled)
	bp, err := c.Blueprint(ctx, target.TargetID)
	require.NoError(t, err)
	sled, zone := rack.Sleds[0].ID, rack.Sleds[0].Zones[1].ID
	gen, ok := bp.NexusGenerationOf(zone)
	require.True(t, ok)
	assert.Equal(t, uint64(1), gen)

	child, err := bp.ChildExpunging(uuid.New(), sled, zone, 4, "fleetsaga", "expunge", time.Now())
	require.NoError(t, err)
	require.NoError(t, c.Import(ctx, child))
	next, err := c.SetTarget(ctx, child.ID, true)
	require.NoError(t, err)
	assert.Equal(t, child.ID, next.TargetID)
	got, err := c.Blueprint(ctx, child.ID)
	require.NoError(t, err)
	z, ok := got.Zone(sled, zone)
	require.True(t, ok)
	assert.Equal(t, nexuslockstep.Disposition{Kind: nexuslockstep.Expunged, AsOfGeneration: 4}, z.Disposition)
	assert.Equal(t, uint64(4), got.Sleds[sled].SledAgentGeneration)
	assert.Equal(t, bp.ID, *got.ParentBlueprintID)
	other, _ := got.Zone(rack.Sleds[1].ID, rack.Sleds[1].Zones[0].ID)
	assert.Equal(t, nexuslockstep.InService, other.Disposition.Kind, "the rest of the blueprint unchanged")

	// A second child of the old target: the target moved on.
	sibling, err := bp.ChildExpunging(uuid.New(), sled, zone, 4, "fleetsaga", "late", time.Now())
	require.NoError(t, err)
	require.NoError(t, c.Import(ctx, sibling))
	_, err = c.SetTarget(ctx, sibling.ID, true)
	assert.True(t, nexuslockstep.IsTargetMoved(err), "%v", err)
	assert.False(t, nexuslockstep.IsRetryable(err))

	_, err = c.Blueprint(ctx, uuid.New())
	assert.True(t, nexuslockstep.IsNotFound(err), "%v", err)

	_, err = nexuslockstep.New(srv.URL+"/nexus/bare", nil).Target(ctx)
	assert.True(t, nexuslockstep.IsNotLockstepAPI(err), "%v", err)
}

// A child naming a host phase 2 artifact for one boot disk follows the
// lockstep document (the import request is checked against it, with the
// blueprint's artifact version), becomes the target, and keeps the other
// disk's desired contents and the rest of the blueprint.
func TestChildWithHostPhase2FollowsOpenAPI(t *testing.T) {
	ctx := context.Background()
	rack := spec.SampleRack("r", []string{"internal_ntp"})
	rack.Owners = spec.RackOwners{Nexus: spec.On(), Executor: spec.Off(), MGSUpdates: spec.Off()}
	s := &spec.Spec{Seed: 1, SpeedUp: 100, Timings: spec.DefaultTimings(), Racks: []spec.Rack{rack}}
	require.NoError(t, s.Validate())
	srv, err := fleetsim.Start(ctx, fleetsim.Env{Spec: s, Faults: faults.NewRegistry(1), Log: zerolog.Nop()}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	tr := &openapi.Transport{Contract: openapi.MustLoad(openapi.NexusLockstep), Prefix: "/nexus/r", Rep: t, Responses: true}
	c := nexuslockstep.New(srv.URL+"/nexus/r", &http.Client{Transport: tr, Timeout: 10 * time.Second})

	target, err := c.Target(ctx)
	require.NoError(t, err)
	bp, err := c.Blueprint(ctx, target.TargetID)
	require.NoError(t, err)
	sled := rack.Sleds[0].ID
	gen := bp.Sleds[sled].SledAgentGeneration + 1
	const hash = "81a8c9dfee057ede479a0deca3589182752e82decafd1d84734c74f9378636ac"
	child, err := bp.ChildWithHostPhase2(uuid.New(), sled, "B", hash, "2.0.0", gen, "fleetsaga", "phase 2", time.Now())
	require.NoError(t, err)
	require.NoError(t, c.Import(ctx, child))
	_, err = c.SetTarget(ctx, child.ID, true)
	require.NoError(t, err)
	got, err := c.Blueprint(ctx, child.ID)
	require.NoError(t, err)
	sc := got.Sleds[sled]
	assert.Equal(t, gen, sc.SledAgentGeneration)
	assert.Equal(t, "artifact", sc.HostPhase2["slot_b"].Type)
	assert.Equal(t, hash, sc.HostPhase2["slot_b"].Hash)
	assert.Equal(t, "current_contents", sc.HostPhase2["slot_a"].Type, "the other disk keeps its contents")
	assert.Equal(t, bp.Sleds[rack.Sleds[1].ID], got.Sleds[rack.Sleds[1].ID], "other sleds unchanged")
}

// What answers where the lockstep API should be decides nothing about the
// owner: another server's answer (dropshot's 404 for an unknown route, or
// the 400 a versioned server such as Nexus's internal API gives a request
// without api-version: dropshot/src/versioning.rs) is "not the lockstep
// API"; a refused connection is retried, and is neither.
func TestWhatIsNotTheLockstepAPI(t *testing.T) {
	ctx := context.Background()
	answer := func(status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	for _, c := range []struct {
		name, url string
		notAPI    bool
	}{
		{"unknown route", answer(404, `{"request_id":"r1","message":"Not Found"}`), true},
		{"versioned server", answer(400, `{"request_id":"r2","message":"missing expected header \"api-version\""}`), true},
		{"a Nexus's not found", answer(404, `{"request_id":"r3","error_code":"ObjectNotFound","message":"not found: blueprint"}`), false},
		{"a Nexus's bad request", answer(400, `{"request_id":"r4","error_code":"InvalidRequest","message":"no"}`), false},
	} {
		_, err := nexuslockstep.New(c.url, nil).Target(ctx)
		require.Error(t, err, c.name)
		assert.Equal(t, c.notAPI, nexuslockstep.IsNotLockstepAPI(err), "%s: %v", c.name, err)
		assert.False(t, nexuslockstep.IsRetryable(err), c.name)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	_, err = nexuslockstep.New(refused, nil).Target(ctx)
	require.Error(t, err)
	assert.False(t, nexuslockstep.IsNotLockstepAPI(err), "%v", err)
	assert.True(t, nexuslockstep.IsRetryable(err), "%v", err)
}
