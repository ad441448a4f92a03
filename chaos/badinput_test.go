package chaos

// Bad input one level up from the clients (whose own tables are in each
// fleet client's fuzz_test.go): an activity handed a status that names
// another device must refuse it and change nothing, in the ledger or on the
// device.

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/testsuite"

	fleetapi "github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// wrongSledAgent answers every sled's /inventory with the inventory of
// another sled (at generation gen, without the zone) and counts PUTs.
func wrongSledAgent(t *testing.T, other, keep uuid.UUID, gen uint64) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var puts atomic.Int32
	cfg := sledagent.NewSledConfig(gen, sledagent.OmicronZoneConfig{ID: keep, ZoneType: sledagent.OmicronZoneType{Type: "crucible"}})
	inv := sledagent.Inventory{SledID: other, LedgeredSledConfig: &cfg,
		ReconcilerStatus:   sledagent.ConfigReconcilerInventoryStatus{Status: sledagent.StatusIdle},
		LastReconciliation: &sledagent.ConfigReconcilerInventory{LastReconciledConfig: cfg, Zones: map[uuid.UUID]sledagent.ConfigReconcilerInventoryResult{keep: {Result: sledagent.ResultOK}}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/inventory"):
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(inv)
		case r.Method == http.MethodPut:
			// Acked, but this inventory never shows it; after 100, refuse
			// for good so a caller that keeps PUTting stops.
			if puts.Add(1) > 100 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"request_id":"t","error_code":"Test","message":"stop: 100 PUTs already"}`))
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &puts
}

// expungeIntent writes the ledger rows a zone expunge has before step 3.
func expungeIntent(t *testing.T, env *testenv.Env, sled, zone uuid.UUID) uuid.UUID {
	t.Helper()
	id := uuid.New()
	ctx := t.Context()
	if err := env.Store.RecordIntent(ctx, ledger.Attempt{ID: id, UpdateID: workflows.WorkflowID(workflows.KindZoneExpunge, "zone/"+zone.String()),
		Attempt: 1, Kind: string(workflows.KindZoneExpunge), Target: "zone/" + zone.String(), WorkflowID: "wf", RunID: "run"}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.RecordZoneExpunge(ctx, ledger.ExpungeIntent{ZoneID: zone, SledID: sled, Kind: "nexus", ExpungedAsOf: 3, AttemptID: id}); err != nil {
		t.Fatal(err)
	}
	return id
}

// The inventory proof that a Nexus zone is gone (which gates moving its
// sagas) must come from the zone's own sled: an inventory of another sled,
// where the zone of course is absent, proves nothing.
func TestBadInputZoneProofFromAnotherSled(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	env := testenv.New(t)
	sled, other, zone := uuid.New(), uuid.New(), uuid.New()
	attemptID := expungeIntent(t, env, sled, zone)
	srv, _ := wrongSledAgent(t, other, uuid.New(), 9)
	acts := zoneexpunge.NewZoneActivities(env.Store, fleetapi.Endpoints{SledAgent: srv.URL + "/sled-agent/{sled}"}, srv.Client(), "chaos-test")
	var ts testsuite.WorkflowTestSuite
	aenv := ts.NewTestActivityEnvironment()
	aenv.RegisterActivity(acts)
	_, err := aenv.ExecuteActivity(acts.AwaitZoneGone, zoneexpunge.ZoneGoneInput{AttemptID: attemptID, Sled: sled, Zone: zone,
		ExpungedAsOf: 3, Deadline: time.Now().Add(time.Second), PollInterval: 50 * time.Millisecond})
	z, zerr := env.Store.ZoneDisposition(t.Context(), zone)
	if zerr != nil {
		t.Fatal(zerr)
	}
	if z.ReadyForCleanup {
		t.Errorf("AwaitZoneGone accepted sled %s's inventory as proof that zone %s left sled %s and marked it ready for "+
			"cleanup (saga reassignment follows): it must compare inventory.sled_id with the sled it asked", other, zone, sled)
	}
	if err == nil {
		t.Error("an inventory of another sled was accepted without an error")
	}
}

// Step 3 reads the ledgered config from inventory and PUTs it back without
// the zone: with another sled's (older) inventory it would write that
// sled's zones to this sled.
func TestBadInputZonePutWithAnotherSledsConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	env := testenv.New(t)
	sled, other, zone := uuid.New(), uuid.New(), uuid.New()
	attemptID := expungeIntent(t, env, sled, zone)
	srv, puts := wrongSledAgent(t, other, uuid.New(), 2)
	acts := zoneexpunge.NewZoneActivities(env.Store, fleetapi.Endpoints{SledAgent: srv.URL + "/sled-agent/{sled}"}, srv.Client(), "chaos-test")
	var ts testsuite.WorkflowTestSuite
	aenv := ts.NewTestActivityEnvironment()
	aenv.RegisterActivity(acts)
	_, err := aenv.ExecuteActivity(acts.PutConfigWithoutZone, zoneexpunge.ZonePutInput{AttemptID: attemptID, Sled: sled, Zone: zone,
		ExpungedAsOf: 3, Deadline: time.Now().Add(time.Second), RetryInitial: 50 * time.Millisecond, RetryMax: 100 * time.Millisecond})
	if n := puts.Load(); n > 0 {
		t.Errorf("%d PUT(s) of sled %s's config (minus zone %s) sent to sled %s: PutConfigWithoutZone must compare "+
			"inventory.sled_id with the sled it asked (and, when a PUT succeeds but inventory does not show it, "+
			"pause and honour its deadline instead of PUTting again at once)", n, other, zone, sled)
	}
	if err == nil {
		t.Error("an inventory of another sled was accepted without an error")
	}
}
