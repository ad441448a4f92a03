package nexus_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/nexus"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

const waitFor = 15 * time.Second

// The executor pushes the target's configs; a config written behind its
// back at a higher generation makes its pushes refused (the zone stays
// gone while the blueprint still lists it), and the next blueprint with a
// higher generation overwrites it: the zone comes back.
func TestExecutorOverwritesAConfigWrittenBehindItsBack(t *testing.T) {
	s, srv, c, sa := crucibleRack(t)
	sled0, crucible := s.Racks[0].Sleds[0].ID, s.Racks[0].Sleds[0].Zones[1].ID
	ctx := context.Background()

	// Rack setup's blueprint is what the sleds ledgered: the first pushes
	// are accepted and change nothing.
	require.Eventually(t, func() bool {
		p := nexusTruth(t, srv).Pushes
		return len(p) == 2 && p[sled0].Status == http.StatusNoContent && p[s.Racks[0].Sleds[1].ID].Status == http.StatusNoContent
	}, waitFor, 10*time.Millisecond)
	inv, err := sa.Inventory(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(3), inv.LedgeredSledConfig.Generation)

	// Someone else removes the crucible zone at generation 4.
	cfg := inv.LedgeredSledConfig.Clone()
	delete(cfg.Zones, crucible)
	cfg.Generation = 4
	require.NoError(t, sa.PutOmicronConfig(ctx, cfg))
	require.Eventually(t, func() bool {
		p := nexusTruth(t, srv).Pushes[sled0]
		return p.Status == http.StatusBadRequest && p.Error == "sled config generation out of date (got 3, have 4)"
	}, waitFor, 10*time.Millisecond, "the executor's push at generation 3 is refused")
	assert.Equal(t, nexus.InService, c.targetBlueprint().Sleds[sled0].Zones[crucible].Disposition.Kind,
		"the blueprint still lists the zone in service")

	// A later blueprint at generation 5 brings the zone back.
	c.makeChildTarget(func(bp *nexus.Blueprint) { bp.Sleds[sled0].SledAgentGeneration = 5 }, true)
	require.Eventually(t, func() bool {
		inv, err := sa.Inventory(ctx)
		require.NoError(t, err)
		present, res := inv.ZonePresent(crucible)
		return inv.LedgeredSledConfig.Generation == 5 && present && res.Result == sledagent.ResultOK
	}, waitFor, 10*time.Millisecond, "the executor's next push overwrote the other writer's config")
	assert.Equal(t, http.StatusNoContent, nexusTruth(t, srv).Pushes[sled0].Status)
}

// A zone expunged through a new target blueprint is removed by the
// executor's push; the planner marks it ready for cleanup only once
// inventory shows its sled at as_of_generation without it (not while its
// removal keeps failing), in a new target that is a child of ours.
func TestPlannerMarksExpungedZoneReadyForCleanupFromInventory(t *testing.T) {
	s, srv, c, sa := crucibleRack(t)
	sled0, crucible := s.Racks[0].Sleds[0].ID, s.Racks[0].Sleds[0].Zones[1].ID
	armFault(t, srv, faults.Fault{Kind: faults.ZoneRemovalFailure, Target: "zone/" + crucible.String(), Times: 2})

	ours := c.makeChildTarget(func(bp *nexus.Blueprint) {
		sc := bp.Sleds[sled0]
		sc.SledAgentGeneration = 4
		expunge(sc.Zones[crucible], 4)
	}, true)

	var planned *nexus.Blueprint
	require.Eventually(t, func() bool {
		bp := c.targetBlueprint()
		if _, ready := bp.Sleds[sled0].Zones[crucible].Expunged(); !ready {
			return false
		}
		// Ready for cleanup only with inventory's proof.
		inv, err := sa.Inventory(context.Background())
		require.NoError(t, err)
		gone, why := inv.ZoneGone(crucible, 4)
		require.True(t, gone, "marked ready for cleanup while %s", why)
		planned = bp
		return true
	}, waitFor, 5*time.Millisecond)
	require.NotNil(t, planned.ParentBlueprintID)
	assert.Equal(t, ours.ID, *planned.ParentBlueprintID, "the planner's blueprint is a child of ours")
	assert.True(t, c.target().Enabled)
	var st struct {
		Sleds []struct {
			ID              uuid.UUID         `json:"id"`
			RemovalAttempts map[uuid.UUID]int `json:"removal_attempts"`
		} `json:"sleds"`
	}
	getJSON(t, srv.URL+"/truth/sled", &st)
	for _, sl := range st.Sleds {
		if sl.ID == sled0 {
			assert.Equal(t, 3, sl.RemovalAttempts[crucible], "two failed removals, then the one that succeeded")
		}
	}
}

// Sagas of an expunged Nexus that is ready for cleanup move only to a
// running Nexus of the same nexus_generation, never to one of another.
func TestSagasOfExpungedNexusMoveOnlyToSameGenerationNexus(t *testing.T) {
	url, db := sagaDB(t)
	s := rackSpec(t, spec.RackOwners{MGSUpdates: spec.Off()}, []string{"nexus"}, []string{"nexus"}, []string{"nexus"})
	s.Timings.SagaRunTime = spec.Duration{Duration: 24 * time.Hour} // claimed sagas stay unfinished
	// The other generation's Nexus (C, sled 2) sorts first, so a
	// reassignment that ignored the generation would pick it.
	z1, z2 := &s.Racks[0].Sleds[1].Zones[0], &s.Racks[0].Sleds[2].Zones[0]
	if z2.ID.String() > z1.ID.String() {
		z1.ID, z2.ID = z2.ID, z1.ID
	}
	srv := startSim(t, s, url)
	c := newLockstep(t, srv)
	sled0 := s.Racks[0].Sleds[0].ID
	a, b, cz := s.Racks[0].Sleds[0].Zones[0].ID, s.Racks[0].Sleds[1].Zones[0].ID, s.Racks[0].Sleds[2].Zones[0].ID

	claimedBy := func(z uuid.UUID) int {
		return count(t, db, `SELECT count(*) FROM omicron.saga WHERE current_sec = $1 AND saga_state = 'running'`, z)
	}
	require.Eventually(t, func() bool { return claimedBy(a) >= 2 }, waitFor, 20*time.Millisecond)

	// Nexus C is of generation 2; A is expunged.
	c.makeChildTarget(func(bp *nexus.Blueprint) {
		setNexusGeneration(t, bp.Sleds[s.Racks[0].Sleds[2].ID].Zones[cz], 2)
		sc := bp.Sleds[sled0]
		sc.SledAgentGeneration = 4
		expunge(sc.Zones[a], 4)
	}, true)
	require.Eventually(t, func() bool {
		for _, r := range nexusTruth(t, srv).Sagas {
			if r.From == a {
				return true
			}
		}
		return false
	}, waitFor, 10*time.Millisecond)
	for _, r := range nexusTruth(t, srv).Sagas {
		assert.Equal(t, a, r.From)
		assert.Equal(t, b, r.To, "only to the Nexus of the same generation")
		assert.Equal(t, uint64(1), r.NexusGeneration)
	}
	assert.Zero(t, claimedBy(a), "no unfinished saga left on the expunged Nexus")
	assert.Zero(t, count(t, db, `SELECT count(*) FROM omicron.saga s WHERE current_sec = $1 AND EXISTS (
		SELECT 1 FROM fleetsim.saga_history h WHERE h.saga_id = s.id AND h.event = 'claim' AND h.sec = $2)`, cz, a),
		"no saga of the expunged Nexus went to the Nexus of another generation")
	require.Eventually(t, func() bool {
		return count(t, db, `SELECT count(*) FROM fleetsim.saga_history h WHERE h.event = 'adopt' AND h.sec = $1
			AND EXISTS (SELECT 1 FROM fleetsim.saga_history c WHERE c.saga_id = h.saga_id AND c.event = 'claim' AND c.sec = $2)`, b, a) > 0
	}, waitFor, 20*time.Millisecond, "Nexus B recovers the sagas it was given")
	assert.Zero(t, count(t, db, `SELECT count(*) FROM fleetsim.saga_history WHERE event = 'adopt' AND sec <> $1`, b))
}

// crucibleRack runs the executor over a rack whose sled 0 has an NTP and a
// crucible zone and sled 1 a Nexus; it returns sled 0's sled-agent.
func crucibleRack(t *testing.T) (*spec.Spec, *fleetsim.Server, *lockstepClient, *sledagent.Client) {
	s := rackSpec(t, spec.RackOwners{MGSUpdates: spec.Off()}, []string{"internal_ntp", "crucible"}, []string{"nexus"})
	srv := startSim(t, s, "")
	return s, srv, newLockstep(t, srv), sledClient(t, srv, s.Racks[0].Sleds[0].ID)
}

func expunge(z *nexus.ZoneConfig, asOf uint64) {
	f := false
	z.Disposition = nexus.Disposition{Kind: nexus.Expunged, AsOfGeneration: &asOf, ReadyForCleanup: &f}
}

func setNexusGeneration(t *testing.T, z *nexus.ZoneConfig, gen uint64) {
	var f map[string]any
	require.NoError(t, json.Unmarshal(z.ZoneType, &f))
	f["nexus_generation"] = gen
	raw, err := json.Marshal(f)
	require.NoError(t, err)
	z.ZoneType = raw
}

func count(t *testing.T, db *sql.DB, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(q, args...).Scan(&n), q)
	return n
}

func armFault(t *testing.T, srv *fleetsim.Server, f faults.Fault) {
	t.Helper()
	_, err := srv.Env.Faults.Arm(f)
	require.NoError(t, err)
}

// A disabled target is not executed: a newer blueprint made the target
// disabled changes nothing until it is enabled.
func TestExecutorIdleWhileTargetDisabled(t *testing.T) {
	s, srv, c, sa := crucibleRack(t)
	sled0 := s.Racks[0].Sleds[0].ID
	ctx := context.Background()
	period := s.Scale(s.Timings.BlueprintExecutorInterval.Duration)
	require.Eventually(t, func() bool { return nexusTruth(t, srv).PushCount > 0 }, waitFor, 10*time.Millisecond)

	child := c.makeChildTarget(func(bp *nexus.Blueprint) { bp.Sleds[sled0].SledAgentGeneration = 4 }, false)
	time.Sleep(period) // a pass already under way ends
	before := nexusTruth(t, srv).PushCount
	time.Sleep(5 * period)
	assert.Equal(t, before, nexusTruth(t, srv).PushCount, "no push while the target is disabled")
	inv, err := sa.Inventory(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), inv.LedgeredSledConfig.Generation)

	status, eb := c.do(http.MethodPut, "/deployment/blueprints/target/enabled", map[string]any{"target_id": child.ID, "enabled": true}, nil)
	require.Equal(t, http.StatusOK, status, eb.Message)
	require.Eventually(t, func() bool {
		inv, err := sa.Inventory(ctx)
		require.NoError(t, err)
		return inv.LedgeredSledConfig.Generation == 4
	}, waitFor, 10*time.Millisecond)
}

// The executor and the MGS driver are Nexus's: the spec refuses them
// without it.
func TestOwnersNeedNexus(t *testing.T) {
	rack := spec.SampleRack(rackID)
	rack.Owners = spec.RackOwners{Nexus: spec.Off(), Executor: spec.On()}
	s := &spec.Spec{Seed: 1, SpeedUp: 1, Timings: spec.DefaultTimings(), Racks: []spec.Rack{rack}}
	assert.ErrorContains(t, s.Validate(), "owners.executor and owners.mgsUpdates need owners.nexus")
}
