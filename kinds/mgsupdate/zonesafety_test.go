package mgsupdate_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
)

// rackOf is a rack where sled i holds one zone of kinds[i].
func rackOf(kinds ...string) (sleds []uuid.UUID, f mgsupdate.ZoneFacts) {
	for _, k := range kinds {
		s := uuid.New()
		sleds = append(sleds, s)
		f.InService = append(f.InService, mgsupdate.SledZone{Sled: s, Zone: uuid.New(), Kind: k})
	}
	return sleds, f
}

func repeat(kind string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = kind
	}
	return out
}

func u64(v uint64) *uint64 { return &v }

// Ported from omicron's test_update_cockroach
// (nexus/reconfigurator/planning/tests/integration_tests/planner.rs): the
// planner does not bounce a CockroachDB zone on missing statuses, one
// missing node, any under-replicated range or one live node short; it
// does once every node reports zero and the goal.
func TestZoneSafetyCockroach(t *testing.T) {
	sleds, f := rackOf(repeat(mgsupdate.ZoneKindCockroachDB, 5)...)
	valid := func() []mgsupdate.CockroachNodeStatus {
		out := make([]mgsupdate.CockroachNodeStatus, 5)
		for i := range out {
			out[i] = mgsupdate.CockroachNodeStatus{RangesUnderreplicated: u64(0), LivenessLiveNodes: u64(5)}
		}
		return out
	}
	cases := map[string]struct {
		status []mgsupdate.CockroachNodeStatus
		reason string
	}{
		"no statuses":         {[]mgsupdate.CockroachNodeStatus{}, "not enough nodes: 0 heard from < 5"},
		"one node missing":    {valid()[1:], "not enough nodes: 4 heard from < 5"},
		"underreplicated":     {append(valid()[1:], mgsupdate.CockroachNodeStatus{RangesUnderreplicated: u64(1), LivenessLiveNodes: u64(5)}), "1 > 0 underreplicated ranges"},
		"one live node short": {append(valid()[1:], mgsupdate.CockroachNodeStatus{RangesUnderreplicated: u64(0), LivenessLiveNodes: u64(4)}), "not enough live nodes: 4 < 5"},
		"missing ranges stat": {append(valid()[1:], mgsupdate.CockroachNodeStatus{LivenessLiveNodes: u64(5)}), "missing ranges_underreplicated stat"},
		"missing live nodes":  {append(valid()[1:], mgsupdate.CockroachNodeStatus{RangesUnderreplicated: u64(0)}), "missing live_nodes stat"},
		"healthy":             {valid(), ""},
		"unread, five in use": {nil, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f.CockroachStatus = c.status
			got := mgsupdate.SledUnsafeReasons(f, sleds[0])
			if c.reason == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.Equal(t, mgsupdate.ZoneKindCockroachDB, got[0].Kind)
			assert.Equal(t, "cockroach unsafe to shut down: "+c.reason, got[0].Reason)
		})
	}
}

// Fewer in-service CockroachDB zones than the target: with inventory's
// statuses unread, the most the real rule could count is the zones in
// service, so the sled is refused.
func TestZoneSafetyCockroachUnreadCountsInService(t *testing.T) {
	sleds, f := rackOf(mgsupdate.ZoneKindCockroachDB, "crucible")
	got := mgsupdate.SledUnsafeReasons(f, sleds[0])
	require.Len(t, got, 1)
	assert.Equal(t, mgsupdate.ZoneUnsafe{Sled: sleds[0], Zone: f.InService[0].Zone, Kind: mgsupdate.ZoneKindCockroachDB,
		Healthy: 1, InService: 1, Required: 5, Reason: "cockroach unsafe to shut down: not enough nodes: 1 in service < 5"}, got[0])
	assert.Empty(t, mgsupdate.SledUnsafeReasons(f, sleds[1]), "a sled without a guarded zone may reboot")
}

// Ported from omicron's test_update_internal_dns: a DNS server behind (or
// ahead of) the database's generation does not count; three at it do.
func TestZoneSafetyInternalDNS(t *testing.T) {
	sleds, f := rackOf(repeat(mgsupdate.ZoneKindInternalDNS, 3)...)
	f.InternalDNSVersion = 7
	gens := func(g ...uint64) []mgsupdate.ZoneGeneration {
		var out []mgsupdate.ZoneGeneration
		for i, v := range g {
			out = append(out, mgsupdate.ZoneGeneration{Zone: f.InService[i].Zone, Generation: v})
		}
		return out
	}
	f.DNSGenerations = gens(7, 7, 6)
	got := mgsupdate.SledUnsafeReasons(f, sleds[0])
	require.Len(t, got, 1)
	assert.Equal(t, "only 2/3 internal DNS zones are synchronized; require at least 3", got[0].Reason)
	f.DNSGenerations = gens(7, 7, 8)
	assert.Len(t, mgsupdate.SledUnsafeReasons(f, sleds[0]), 1, "newer than the database: the planner's view is stale")
	f.DNSGenerations = gens(7, 7, 7)
	assert.Empty(t, mgsupdate.SledUnsafeReasons(f, sleds[0]))
	// A status of a zone not in service (expunged) is not counted.
	f.DNSGenerations = append(gens(7, 7), mgsupdate.ZoneGeneration{Zone: uuid.New(), Generation: 7})
	assert.Len(t, mgsupdate.SledUnsafeReasons(f, sleds[0]), 1)
}

// Ported from omicron's test_update_boundary_ntp: both boundary NTP zones
// must be synchronized before either goes down.
func TestZoneSafetyBoundaryNTP(t *testing.T) {
	sleds, f := rackOf(mgsupdate.ZoneKindBoundaryNTP, mgsupdate.ZoneKindBoundaryNTP)
	f.NTPTimesync = []mgsupdate.ZoneTimesync{{Zone: f.InService[0].Zone, Synced: true}, {Zone: f.InService[1].Zone, Synced: false}}
	got := mgsupdate.SledUnsafeReasons(f, sleds[0])
	require.Len(t, got, 1)
	assert.Equal(t, "only 1/2 boundary NTP zones are synchronized; require at least 2", got[0].Reason)
	f.NTPTimesync[1].Synced = true
	assert.Empty(t, mgsupdate.SledUnsafeReasons(f, sleds[0]))
	f.NTPTimesync = nil
	assert.Empty(t, mgsupdate.SledUnsafeReasons(f, sleds[0]), "unread: two in service is the most it could count")
	_, one := rackOf(mgsupdate.ZoneKindBoundaryNTP)
	assert.Len(t, mgsupdate.SledUnsafeReasons(one, one.InService[0].Sled), 1)
}
