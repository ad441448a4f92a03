package zoneexpunge_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/nexuslockstep"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/nexus"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/workerapp"
)

// ownedRack is a test's stack with today's rack (every owner on) in its
// fleetsim.
func ownedRack(t *testing.T) (*testenv.Env, zxRack, *fleetsim.Server) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	env := testenv.New(t)
	r := newZXRack(t, 0, spec.SledAgentLedgerFirst)
	r.spec.Racks[0].Owners = spec.RackOwners{}
	require.NoError(t, r.spec.Validate())
	return env, r, env.StartFleetsim(r.spec)
}

// untouched: fleetsaga wrote nothing on the rack: sled A still at rack
// setup's generation with Nexus A running, the target the one given, no
// blueprint of fleetsaga's, no attempt left active.
func untouched(t *testing.T, env *testenv.Env, sim *fleetsim.Server, r zxRack, target nexus.Target) {
	t.Helper()
	st := sledOf(sledTruth(t, sim), r.sledA)
	assert.Equal(t, uint64(3), st.LedgeredGeneration, "no sled config written")
	assert.True(t, nexusOf(sledTruth(t, sim), r.nexusA).Running)
	nt := nexusTruth(t, sim)
	assert.Equal(t, target.TargetID, nt.Target.TargetID)
	assert.Equal(t, target.Enabled, nt.Target.Enabled, "fleetsaga neither enabled nor disabled the target")
	assert.Zero(t, fleetsagaBlueprints(t, sim, r))
	active, err := env.Store.ActiveForTarget(context.Background(), r.input().Target())
	require.NoError(t, err)
	assert.Nil(t, active)
}

// expungeFails runs the expunge to its end and returns its typed error.
func expungeFails(t *testing.T, env *testenv.Env, r zxRack) *temporal.ApplicationError {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var res zoneexpunge.ZoneExpungeResult
	err := startZoneExpunge(t, env, r.input()).Get(ctx, &res)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	return app
}

// On a rack whose Nexus owns the sled configs, an expunge whose owner is not
// known stops with the configuration to fix, and writes nothing: neither
// with no lockstep endpoint and no direct mode, nor with an endpoint that
// is not the lockstep API (here a path fleetsim does not serve; a real
// Nexus's internal port answers likewise, fleet/nexuslockstep
// TestWhatIsNotTheLockstepAPI).
func TestZoneExpungeWithoutAKnownOwnerStops(t *testing.T) {
	for _, c := range []struct {
		name     string
		lockstep func(sim *fleetsim.Server) string
		want     []string
	}{
		{"no endpoint", func(*fleetsim.Server) string { return "" },
			[]string{"no owner of the rack's sled configs and SP updates is configured", "--nexus-lockstep", "--direct-mode"}},
		{"not the lockstep API", func(sim *fleetsim.Server) string { return sim.URL + "/nexus-internal/{rack}" },
			[]string{"is not Nexus's lockstep API", "fix the nexus-lockstep endpoint"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, r, sim := ownedRack(t)
			ep := r.endpoints(env, sim)
			ep.NexusLockstep = c.lockstep(sim)
			env.StartWorker(workerapp.Deps{Fleet: ep})
			target := nexusTruth(t, sim).Target

			app := expungeFails(t, env, r)
			assert.Equal(t, failure.OwnerUnknown, app.Type())
			for _, w := range c.want {
				assert.Contains(t, app.Error(), w)
			}
			untouched(t, env, sim, r, target)
		})
	}
}

// A disabled target is an operator's pause, not a release: the expunge
// stops saying so and how to go on, and neither writes the sled's config
// nor enables the target.
func TestZoneExpungeStopsAtADisabledTarget(t *testing.T) {
	env, r, sim := ownedRack(t)
	env.StartWorker(workerapp.Deps{Fleet: r.endpoints(env, sim)})
	tg := nexusTruth(t, sim).Target
	_, err := nexuslockstep.New(sim.URL+"/nexus/"+r.spec.Racks[0].ID, nil).SetTargetEnabled(context.Background(), tg.TargetID, false)
	require.NoError(t, err)
	tg.Enabled = false

	app := expungeFails(t, env, r)
	assert.Equal(t, failure.TargetDisabled, app.Type())
	assert.Contains(t, app.Error(), "target blueprint "+tg.TargetID.String()+" is disabled: an operator paused Nexus's executor")
	assert.Contains(t, app.Error(), "omdb nexus blueprints target enable "+tg.TargetID.String())
	untouched(t, env, sim, r, tg)
}

// A refused connection is retried, never taken for "no owner": the
// precheck fails retryably and nothing is written.
func TestZoneExpungePrecheckRetriesARefusedLockstepConnection(t *testing.T) {
	env, r, sim := ownedRack(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ep := r.endpoints(env, sim)
	ep.NexusLockstep = "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	target := nexusTruth(t, sim).Target

	za := zoneexpunge.NewZoneActivities(env.Store, ep, &http.Client{Timeout: 5 * time.Second}, "test")
	_, err = za.PrecheckZoneExpunge(context.Background(), zoneexpunge.ZonePrecheckInput{UpdateID: "u", Sled: r.sledA, Zone: r.nexusA})
	require.Error(t, err)
	var app *temporal.ApplicationError
	assert.False(t, errors.As(err, &app) && app.NonRetryable(), "retried: %v", err)
	assert.Contains(t, err.Error(), "connection refused")
	untouched(t, env, sim, r, target)
}
