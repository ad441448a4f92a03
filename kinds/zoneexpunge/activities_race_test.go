package zoneexpunge_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
)

// racingWriter puts a proxy in front of fleetsim: just before fleetsaga's
// first PUT reaches the sled, another writer ledgers the same generation
// with the zone still in it and one more zone (a concurrent Reconfigurator).
// The real sled-agent then answers fleetsaga with a 400 that has no
// error_code.
func racingWriter(t *testing.T, f *zoneFixture, gen uint64) {
	target, err := url.Parse(f.sim.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var raced atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && raced.CompareAndSwap(false, true) {
			c := f.sledClient()
			inv, err := c.Inventory(r.Context())
			require.NoError(t, err)
			other := inv.LedgeredSledConfig.Clone()
			other.Generation = gen
			extra := uuid.New()
			other.Zones[extra] = sledagent.OmicronZoneConfig{ID: extra, ZoneType: sledagent.OmicronZoneType{
				Type: "crucible_pantry", Raw: []byte(`{"type":"crucible_pantry","address":"[fd00:1122:3344:101::99]:17000"}`)}}
			require.NoError(t, c.PutOmicronConfig(r.Context(), other))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.acts.Fleet.SledAgent = srv.URL + "/sled-agent/{sled}"
}

// A concurrent sled config writer makes the PUT a 400 without error_code:
// the activity re-reads the ledger and asks for a rebase (StaleGeneration
// with the ledgered generation), instead of failing as rejected.
func TestPutConfigWithoutZoneRebasesOnConcurrentWriter(t *testing.T) {
	f := newZoneFixture(t, true)
	f.expunge(t, f.nexusA, 4)
	racingWriter(t, f, 4)
	_, err := f.tenv.ExecuteActivity(f.acts.PutConfigWithoutZone, zoneexpunge.ZonePutInput{AttemptID: f.attempt, Sled: f.sleds[0],
		Zone: f.nexusA, ExpungedAsOf: 4, Deadline: time.Now().Add(time.Minute), RetryInitial: 20 * time.Millisecond})
	require.Error(t, err)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, failure.StaleGeneration, app.Type(), "%v", err)
	var gen uint64
	require.NoError(t, app.Details(&gen))
	assert.Equal(t, uint64(4), gen)

	// Rebased to 5, the PUT goes through and keeps the other writer's zone.
	_, err = f.tenv.ExecuteActivity(f.acts.RebaseZoneExpunge, zoneexpunge.ZoneRebaseInput{AttemptID: f.attempt, Zone: f.nexusA, From: 4, To: 5})
	require.NoError(t, err)
	_, err = f.tenv.ExecuteActivity(f.acts.PutConfigWithoutZone, zoneexpunge.ZonePutInput{AttemptID: f.attempt, Sled: f.sleds[0],
		Zone: f.nexusA, ExpungedAsOf: 5, Deadline: time.Now().Add(time.Minute), RetryInitial: 20 * time.Millisecond})
	require.NoError(t, err)
	inv, err := f.sledClient().Inventory(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(5), inv.LedgeredGeneration())
	assert.Len(t, inv.LedgeredSledConfig.Zones, 2, "ntp and the other writer's zone")
}

// Default mode: the PUT succeeds at once, the removal then fails on the
// sled. Inventory reports the zone's error, and the expunge is not proven
// (nothing marked ready for cleanup) until the removal succeeds.
func TestAwaitZoneGoneWaitsOutAFailingRemoval(t *testing.T) {
	f := newZoneFixture(t, true)
	f.expunge(t, f.nexusA, 4)
	fid, err := f.sim.Env.Faults.Arm(faults.Fault{Kind: faults.ZoneRemovalFailure, Target: "zone/" + f.nexusA.String()}) // until cleared
	require.NoError(t, err)
	v, err := f.tenv.ExecuteActivity(f.acts.PutConfigWithoutZone, zoneexpunge.ZonePutInput{AttemptID: f.attempt, Sled: f.sleds[0],
		Zone: f.nexusA, ExpungedAsOf: 4, Deadline: time.Now().Add(time.Minute), RetryInitial: 20 * time.Millisecond})
	require.NoError(t, err)
	var put zoneexpunge.ZonePutResult
	require.NoError(t, v.Get(&put))
	assert.Equal(t, 1, put.Attempts, "today's sled-agent ledgers at once")
	require.Eventually(t, func() bool {
		inv, err := f.sledClient().Inventory(context.Background())
		require.NoError(t, err)
		present, res := inv.ZonePresent(f.nexusA)
		return present && res.Result == sledagent.ResultErr
	}, 10*time.Second, 10*time.Millisecond, "inventory reports the failed removal")

	_, err = f.tenv.ExecuteActivity(f.acts.AwaitZoneGone, zoneexpunge.ZoneGoneInput{AttemptID: f.attempt, Sled: f.sleds[0],
		Zone: f.nexusA, ExpungedAsOf: 4, Deadline: time.Now().Add(300 * time.Millisecond), PollInterval: 20 * time.Millisecond})
	assert.Equal(t, failure.InventoryProofTimedOut, appErrType(err), "%v", err)
	assert.Contains(t, err.Error(), "zone still on the sled")
	z, err := f.env.Store.ZoneDisposition(context.Background(), f.nexusA)
	require.NoError(t, err)
	assert.False(t, z.ReadyForCleanup, "a failing removal is not proof")
	_, err = f.tenv.ExecuteActivity(f.acts.CommitZoneExpunge, zoneexpunge.ZoneCommitInput{AttemptID: f.attempt, Zone: f.nexusA})
	assert.Equal(t, failure.GateNotProven, appErrType(err))

	require.True(t, f.sim.Env.Faults.Clear(fid))
	_, err = f.tenv.ExecuteActivity(f.acts.AwaitZoneGone, zoneexpunge.ZoneGoneInput{AttemptID: f.attempt, Sled: f.sleds[0],
		Zone: f.nexusA, ExpungedAsOf: 4, Deadline: time.Now().Add(30 * time.Second), PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	z, err = f.env.Store.ZoneDisposition(context.Background(), f.nexusA)
	require.NoError(t, err)
	assert.True(t, z.ReadyForCleanup)
}
