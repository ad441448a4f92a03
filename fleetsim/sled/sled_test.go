package sled_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

var ctx = context.Background()

func TestInventoryReportsSpecState(t *testing.T) {
	s := rackSpec(t, []string{"internal_ntp", "crucible"})
	srv := startSim(t, s, "")
	sl := s.Racks[0].Sleds[0]

	inv := inventory(t, client(t, srv, sl.ID))
	assert.Equal(t, sl.ID, inv.SledID)
	assert.Equal(t, "scrimlet", inv.SledRole) // cubby 0 runs an MGS
	assert.Equal(t, sl.Serial, inv.BaseboardID.SerialNumber)
	assert.Equal(t, uint64(3), inv.LedgeredGeneration())
	assert.Equal(t, sledagent.StatusIdle, inv.ReconcilerStatus.Status)
	require.Len(t, inv.LedgeredSledConfig.Zones, 2)
	for _, z := range sl.Zones {
		present, res := inv.ZonePresent(z.ID)
		assert.True(t, present)
		assert.Equal(t, sledagent.ResultOK, res.Result)
		assert.Equal(t, z.Kind, inv.LedgeredSledConfig.Zones[z.ID].ZoneType.Type)
	}
}

// Opt-in mode (the seed's rule, docs/CONFORMANCE.md §D): the zone is removed before the new
// generation is ledgered, and the removal takes ZoneRemovalTime (scaled).
func TestRemoveBeforeLedgerPutRemovesZoneFirst(t *testing.T) {
	s := rackSpecMode(t, spec.SledAgentRemoveBeforeLedger, []string{"internal_ntp", "crucible"})
	s.Timings.ZoneRemovalTime.Duration = 30 * time.Second // 300 ms at testSpeedUp
	srv := startSim(t, s, "")
	sl := s.Racks[0].Sleds[0]
	c := client(t, srv, sl.ID)
	gone := sl.Zones[1].ID

	cur := inventory(t, c).LedgeredSledConfig
	next := cur.WithoutZone(4, gone)

	var wg sync.WaitGroup
	wg.Add(1)
	var putErr error
	var took time.Duration
	go func() {
		defer wg.Done()
		start := time.Now()
		putErr = c.PutOmicronConfig(ctx, next)
		took = time.Since(start)
	}()
	// While the removal runs, the ledger still holds generation 3 and the
	// reconciler reports the config it is applying.
	require.Eventually(t, func() bool {
		return inventory(t, c).ReconcilerStatus.Status == sledagent.StatusRunning
	}, 2*time.Second, 5*time.Millisecond)
	mid := inventory(t, c)
	assert.Equal(t, uint64(3), mid.LedgeredGeneration())
	assert.Equal(t, uint64(4), mid.ReconcilerStatus.Config.Generation)
	present, _ := mid.ZonePresent(gone)
	assert.True(t, present, "zone must still be present during its removal")

	wg.Wait()
	require.NoError(t, putErr)
	assert.GreaterOrEqual(t, took, 300*time.Millisecond, "removal takes ZoneRemovalTime/SpeedUp")

	inv := inventory(t, c)
	assert.Equal(t, uint64(4), inv.LedgeredGeneration())
	assert.Equal(t, sledagent.StatusIdle, inv.ReconcilerStatus.Status)
	present, _ = inv.ZonePresent(gone)
	assert.False(t, present)
	_, inLedger := inv.LedgeredSledConfig.Zones[gone]
	assert.False(t, inLedger)
	kept, res := inv.ZonePresent(sl.Zones[0].ID)
	assert.True(t, kept)
	assert.Equal(t, sledagent.ResultOK, res.Result)

	tr := sledTruth(t, srv, sl.ID)
	assert.Equal(t, uint64(4), tr.LedgeredGeneration)
	assert.Equal(t, 1, tr.RemovalAttempts[gone])
	assert.Equal(t, sledagent.ResultOK, tr.LastRemoval[gone].Result)
	assert.Contains(t, tr.RemovedAt, gone)
	assert.Len(t, tr.Zones, 1)
}

func TestPutConfigOlderGenerationIsRejected(t *testing.T) {
	s := rackSpec(t, []string{"internal_ntp", "crucible"})
	srv := startSim(t, s, "")
	sl := s.Racks[0].Sleds[0]
	c := client(t, srv, sl.ID)
	old := *inventory(t, c).LedgeredSledConfig

	require.NoError(t, c.PutOmicronConfig(ctx, old.WithoutZone(4, sl.Zones[1].ID)))

	// The old config (generation 3, with the zone) must not bring it back.
	err := c.PutOmicronConfig(ctx, old)
	require.Error(t, err)
	assert.False(t, sledagent.IsRetryable(err))
	var he *sledagent.Error
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusBadRequest, he.StatusCode)
	assert.Empty(t, he.ErrorCode, "the real sled-agent's 400 has no error_code")
	assert.Equal(t, "sled config generation out of date (got 3, have 4)", he.Message)

	inv := awaitZoneGone(t, c, sl.Zones[1].ID, 4)
	assert.Equal(t, uint64(4), inv.LedgeredGeneration())
}

func TestPutConfigSameGenerationDifferentContentsIsRejected(t *testing.T) {
	s := rackSpec(t, []string{"internal_ntp", "crucible"})
	srv := startSim(t, s, "")
	sl := s.Racks[0].Sleds[0]
	c := client(t, srv, sl.ID)
	cur := *inventory(t, c).LedgeredSledConfig

	err := c.PutOmicronConfig(ctx, cur.WithoutZone(3, sl.Zones[1].ID))
	require.Error(t, err)
	assert.False(t, sledagent.IsRetryable(err))
	var he *sledagent.Error
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusBadRequest, he.StatusCode)
	assert.Empty(t, he.ErrorCode, "the real sled-agent's 400 has no error_code")
	assert.Equal(t, "sled config changed with the same generation (3)", he.Message)

	tr := sledTruth(t, srv, sl.ID)
	assert.Equal(t, uint64(3), tr.LedgeredGeneration)
	assert.Len(t, tr.Zones, 2)
	assert.Empty(t, tr.RemovalAttempts, "a rejected config must not touch any zone")
}

func TestPutConfigSameGenerationSameContentsIsAccepted(t *testing.T) {
	s := rackSpec(t, []string{"internal_ntp", "crucible"})
	srv := startSim(t, s, "")
	sl := s.Racks[0].Sleds[0]
	c := client(t, srv, sl.ID)

	next := inventory(t, c).LedgeredSledConfig.WithoutZone(4, sl.Zones[1].ID)
	require.NoError(t, c.PutOmicronConfig(ctx, next))
	require.NoError(t, c.PutOmicronConfig(ctx, next), "resending the ledgered config is accepted")
	// Also when the client re-reads it from inventory (a round trip keeps the contents).
	require.NoError(t, c.PutOmicronConfig(ctx, *inventory(t, c).LedgeredSledConfig))

	awaitZoneGone(t, c, sl.Zones[1].ID, 4)
	tr := sledTruth(t, srv, sl.ID)
	assert.Equal(t, uint64(4), tr.LedgeredGeneration)
	assert.Equal(t, 1, tr.RemovalAttempts[sl.Zones[1].ID])
}

// zone_removal_failure for N attempts: each PUT fails with a retryable 500,
// the old ledger stays, the zone stays present with the error as its last
// result; the same PUT retried succeeds once the fault is used up.
func TestRemoveBeforeLedgerFailureKeepsLedgerAndRetryRetriesRemoval(t *testing.T) {
	s := rackSpecMode(t, spec.SledAgentRemoveBeforeLedger, []string{"internal_ntp", "crucible"})
	srv := startSim(t, s, "")
	sl := s.Racks[0].Sleds[0]
	c := client(t, srv, sl.ID)
	gone := sl.Zones[1].ID
	armFault(t, srv, faults.Fault{Kind: faults.ZoneRemovalFailure, Target: "zone/" + gone.String(), Times: 2})

	next := inventory(t, c).LedgeredSledConfig.WithoutZone(4, gone)
	for attempt := 1; attempt <= 2; attempt++ {
		err := c.PutOmicronConfig(ctx, next)
		require.Error(t, err, "attempt %d", attempt)
		assert.True(t, sledagent.HasCode(err, sledagent.CodeZoneRemovalFailed), "%v", err)
		assert.True(t, sledagent.IsRetryable(err))

		inv := inventory(t, c)
		assert.Equal(t, uint64(3), inv.LedgeredGeneration(), "old ledger kept")
		_, inLedger := inv.LedgeredSledConfig.Zones[gone]
		assert.True(t, inLedger)
		present, res := inv.ZonePresent(gone)
		assert.True(t, present, "zone still there")
		assert.Equal(t, sledagent.ResultErr, res.Result)
		assert.Contains(t, res.Message, gone.String())
		assert.Equal(t, uint64(4), inv.LastReconciliation.LastReconciledConfig.Generation)
		assert.Equal(t, attempt, sledTruth(t, srv, sl.ID).RemovalAttempts[gone])
	}

	require.NoError(t, c.PutOmicronConfig(ctx, next))
	inv := inventory(t, c)
	assert.Equal(t, uint64(4), inv.LedgeredGeneration())
	present, _ := inv.ZonePresent(gone)
	assert.False(t, present)
	tr := sledTruth(t, srv, sl.ID)
	assert.Equal(t, 3, tr.RemovalAttempts[gone])
	assert.Equal(t, sledagent.ResultOK, tr.LastRemoval[gone].Result)
	assert.Empty(t, listFaults(t, srv), "the fault disarms after its Times")
}

// A retry after a partial failure retries only what is left: a zone already
// removed counts as removed and is not attempted again.
func TestRemoveBeforeLedgerRetryAfterPartialRemovalIsIdempotent(t *testing.T) {
	s := rackSpecMode(t, spec.SledAgentRemoveBeforeLedger, []string{"internal_ntp", "crucible", "internal_dns"})
	srv := startSim(t, s, "")
	sl := s.Racks[0].Sleds[0]
	c := client(t, srv, sl.ID)
	a, b := sl.Zones[1].ID, sl.Zones[2].ID
	armFault(t, srv, faults.Fault{Kind: faults.ZoneRemovalFailure, Target: "zone/" + b.String(), Times: 1})

	next := inventory(t, c).LedgeredSledConfig.WithoutZone(4, a)
	delete(next.Zones, b)
	err := c.PutOmicronConfig(ctx, next)
	require.Error(t, err)
	inv := inventory(t, c)
	assert.Equal(t, uint64(3), inv.LedgeredGeneration())
	pa, _ := inv.ZonePresent(a)
	pb, _ := inv.ZonePresent(b)
	assert.False(t, pa, "zone a was removed")
	assert.True(t, pb, "zone b failed to shut down")

	require.NoError(t, c.PutOmicronConfig(ctx, next))
	tr := sledTruth(t, srv, sl.ID)
	assert.Equal(t, uint64(4), tr.LedgeredGeneration)
	assert.Equal(t, 1, tr.RemovalAttempts[a], "already gone = success, not retried")
	assert.Equal(t, 2, tr.RemovalAttempts[b])
	assert.Len(t, tr.Zones, 1)
}

func TestPutConfigAddsZone(t *testing.T) {
	s := rackSpec(t, []string{"internal_ntp"})
	srv := startSim(t, s, "")
	sl := s.Racks[0].Sleds[0]
	c := client(t, srv, sl.ID)
	cur := *inventory(t, c).LedgeredSledConfig
	next := cur.Clone()
	next.Generation = 4
	nz := sledagent.OmicronZoneConfig{ID: uuid.New(), ZoneType: sledagent.OmicronZoneType{Type: "crucible_pantry",
		Raw: []byte(`{"type":"crucible_pantry","address":"[fd00:1122:3344:101::9]:17000"}`)}}
	next.Zones[nz.ID] = nz
	require.NoError(t, c.PutOmicronConfig(ctx, next))
	var inv *sledagent.Inventory
	require.Eventually(t, func() bool {
		inv = inventory(t, c)
		return inv.LastReconciliation.LastReconciledConfig.Generation == 4
	}, 5*time.Second, 5*time.Millisecond)
	present, res := inv.ZonePresent(nz.ID)
	assert.True(t, present)
	assert.Equal(t, sledagent.ResultOK, res.Result)
	assert.Equal(t, "crucible_pantry", inv.LedgeredSledConfig.Zones[nz.ID].ZoneType.Type)
}

// Every malformed request gets a 4xx with a Dropshot JSON error body.
func TestBadRequestsGetJSONErrors(t *testing.T) {
	s := rackSpec(t, []string{"internal_ntp"})
	srv := startSim(t, s, "")
	sl := s.Racks[0].Sleds[0]
	base := sledURL(t, srv, sl.ID)
	z := sl.Zones[0].ID.String()
	valid := `{"generation":4,"zones":{},"datasets":{},"disks":{},"measurements":[]}`

	cases := []struct {
		name, method, url, body string
		status                  int
	}{
		{"unknown sled", "GET", srv.URL + "/sled-agent/" + uuid.NewString() + "/inventory", "", 404},
		{"malformed sled uuid", "GET", srv.URL + "/sled-agent/not-a-uuid/inventory", "", 400},
		{"malformed sled uuid on put", "PUT", srv.URL + "/sled-agent/xyz/omicron-config", valid, 400},
		{"bad json", "PUT", base + "/omicron-config", `{"generation":`, 400},
		{"not an object", "PUT", base + "/omicron-config", `[1,2]`, 400},
		{"unknown field", "PUT", base + "/omicron-config", `{"generation":4,"zones":{},"datasets":{},"disks":{},"measurements":[],"colour":1}`, 400},
		{"missing generation", "PUT", base + "/omicron-config", `{"zones":{},"datasets":{},"disks":{},"measurements":[]}`, 400},
		{"missing datasets", "PUT", base + "/omicron-config", `{"generation":4,"zones":{},"disks":{},"measurements":[]}`, 400},
		{"negative generation", "PUT", base + "/omicron-config", `{"generation":-1,"zones":{},"datasets":{},"disks":{},"measurements":[]}`, 400},
		{"zones as array", "PUT", base + "/omicron-config", `{"generation":4,"zones":[],"datasets":{},"disks":{},"measurements":[]}`, 400},
		{"zone key mismatch", "PUT", base + "/omicron-config", `{"generation":4,"zones":{"` + z + `":{"id":"` + uuid.NewString() + `","zone_type":{"type":"internal_ntp"}}},"datasets":{},"disks":{},"measurements":[]}`, 400},
		{"zone key not a uuid", "PUT", base + "/omicron-config", `{"generation":4,"zones":{"abc":{"id":"` + z + `","zone_type":{"type":"internal_ntp"}}},"datasets":{},"disks":{},"measurements":[]}`, 400},
		{"zone without type", "PUT", base + "/omicron-config", `{"generation":4,"zones":{"` + z + `":{"id":"` + z + `","zone_type":{}}},"datasets":{},"disks":{},"measurements":[]}`, 400},
		{"unknown zone field", "PUT", base + "/omicron-config", `{"generation":4,"zones":{"` + z + `":{"id":"` + z + `","zone_type":{"type":"internal_ntp"},"x":1}},"datasets":{},"disks":{},"measurements":[]}`, 400},
		{"trailing data", "PUT", base + "/omicron-config", valid + `{}`, 400},
		{"oversized body", "PUT", base + "/omicron-config", `{"generation":4,"name":"` + strings.Repeat("x", 2<<20) + `"}`, 413},
		{"wrong method", "POST", base + "/omicron-config", valid, 405},
		{"wrong method on inventory", "DELETE", base + "/inventory", "", 405},
		{"unknown path", "GET", base + "/zones", "", 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, eb := rawRequest(t, tc.method, tc.url, tc.body)
			assert.Equal(t, tc.status, status, "%+v", eb)
		})
	}
	// None of it changed the sled.
	tr := sledTruth(t, srv, sl.ID)
	assert.Equal(t, uint64(3), tr.LedgeredGeneration)
	assert.Empty(t, tr.RemovalAttempts)
}

// Faults.Middleware("sled-agent") applies API-level faults.
func TestSledAgentAPIFaults(t *testing.T) {
	s := rackSpec(t, []string{"internal_ntp"})
	srv := startSim(t, s, "")
	c := client(t, srv, s.Racks[0].Sleds[0].ID)

	armFault(t, srv, faults.Fault{Kind: faults.ErrorRate, Target: "api/sled-agent", Rate: 1, Times: 1})
	_, err := c.Inventory(ctx)
	require.Error(t, err)
	var he *sledagent.Error
	require.ErrorAs(t, err, &he)
	assert.Equal(t, http.StatusServiceUnavailable, he.StatusCode)
	assert.True(t, sledagent.IsRetryable(err))
	inventory(t, c) // disarmed after one

	armFault(t, srv, faults.Fault{Kind: faults.Latency, Target: "api/sled-agent", Latency: "150ms", Times: 1})
	start := time.Now()
	inventory(t, c)
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
}

// Concurrent PUTs of the same config are serialized: one removal attempt.
func TestConcurrentPutsAreSerialized(t *testing.T) {
	s := rackSpec(t, []string{"internal_ntp", "crucible"})
	srv := startSim(t, s, "")
	sl := s.Racks[0].Sleds[0]
	c := client(t, srv, sl.ID)
	next := inventory(t, c).LedgeredSledConfig.WithoutZone(4, sl.Zones[1].ID)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = c.PutOmicronConfig(ctx, next) }()
	}
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}
	awaitZoneGone(t, c, sl.Zones[1].ID, 4)
	assert.Equal(t, 1, sledTruth(t, srv, sl.ID).RemovalAttempts[sl.Zones[1].ID])
}

// Without a database the Nexus simulation is off, but Nexus zones are still
// zones: listed, reported and removable.
func TestNexusZonesWithoutDatabase(t *testing.T) {
	s := rackSpec(t, []string{"internal_ntp", "nexus"})
	srv := startSim(t, s, "")
	sl := s.Racks[0].Sleds[0]
	nexus := sl.Zones[1].ID
	tr := truth(t, srv)
	assert.False(t, tr.NexusEnabled)
	require.Len(t, tr.Nexus, 1)
	assert.True(t, tr.Nexus[0].Running)

	c := client(t, srv, sl.ID)
	require.NoError(t, c.PutOmicronConfig(ctx, inventory(t, c).LedgeredSledConfig.WithoutZone(4, nexus)))
	awaitZoneGone(t, c, nexus, 4)
	n := nexusTruth(t, srv, nexus)
	assert.False(t, n.Running)
	assert.NotNil(t, n.StoppedAt)
	assert.Zero(t, n.SagasClaimed)
}

// Default mode (today's sled-agent, docs/CONFORMANCE.md §H): the PUT is answered once the
// config is ledgered, before any zone is removed; inventory then shows the
// removal running and, once done, the zone gone from last_reconciliation.
func TestLedgerFirstPutLedgersThenRemovesInBackground(t *testing.T) {
	s := rackSpec(t, []string{"internal_ntp", "crucible"})
	s.Timings.ZoneRemovalTime.Duration = 30 * time.Second // 300 ms at testSpeedUp
	srv := startSim(t, s, "")
	sl := s.Racks[0].Sleds[0]
	c := client(t, srv, sl.ID)
	gone := sl.Zones[1].ID

	require.NoError(t, c.PutOmicronConfig(ctx, inventory(t, c).LedgeredSledConfig.WithoutZone(4, gone)))
	mid := inventory(t, c)
	assert.Equal(t, uint64(4), mid.LedgeredGeneration(), "success means ledgered")
	present, _ := mid.ZonePresent(gone)
	assert.True(t, present, "the zone is removed after the PUT returned")

	inv := awaitZoneGone(t, c, gone, 4)
	kept, res := inv.ZonePresent(sl.Zones[0].ID)
	assert.True(t, kept)
	assert.Equal(t, sledagent.ResultOK, res.Result)
	tr := sledTruth(t, srv, sl.ID)
	assert.Equal(t, 1, tr.RemovalAttempts[gone])
	assert.Contains(t, tr.RemovedAt, gone)
}

// Default mode: a failed removal does not fail the PUT (already ledgered);
// inventory reports the zone with its error, and the reconciler retries
// until the removal succeeds.
func TestLedgerFirstFailedRemovalIsReportedAndRetried(t *testing.T) {
	s := rackSpec(t, []string{"internal_ntp", "crucible"})
	srv := startSim(t, s, "")
	sl := s.Racks[0].Sleds[0]
	c := client(t, srv, sl.ID)
	gone := sl.Zones[1].ID
	armFault(t, srv, faults.Fault{Kind: faults.ZoneRemovalFailure, Target: "zone/" + gone.String(), Times: 2})

	require.NoError(t, c.PutOmicronConfig(ctx, inventory(t, c).LedgeredSledConfig.WithoutZone(4, gone)))
	require.Eventually(t, func() bool {
		present, res := inventory(t, c).ZonePresent(gone)
		return present && res.Result == sledagent.ResultErr && strings.Contains(res.Message, gone.String())
	}, 5*time.Second, 5*time.Millisecond, "inventory reports the failed removal")
	assert.Equal(t, uint64(4), inventory(t, c).LedgeredGeneration(), "the ledger moved on anyway")

	awaitZoneGone(t, c, gone, 4)
	tr := sledTruth(t, srv, sl.ID)
	assert.Equal(t, 3, tr.RemovalAttempts[gone])
	assert.Equal(t, sledagent.ResultOK, tr.LastRemoval[gone].Result)
}
