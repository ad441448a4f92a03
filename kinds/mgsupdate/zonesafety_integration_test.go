package mgsupdate_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/nexuslockstep"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// onlyOn keeps the rack's zones of kinds on sled cubby alone (one of
// each), as after the others failed and were expunged.
func onlyOn(r *spec.Rack, cubby int, kinds ...string) {
	for i := range r.Sleds {
		s := &r.Sleds[i]
		s.Zones = slices.DeleteFunc(s.Zones, func(z spec.Zone) bool { return slices.Contains(kinds, z.Kind) && i != cubby })
		for _, k := range kinds {
			if i == cubby && !slices.ContainsFunc(s.Zones, func(z spec.Zone) bool { return z.Kind == k }) {
				s.Zones = append(s.Zones, spec.Zone{ID: uuid.New(), Kind: k})
			}
		}
	}
}

// A sled holding the rack's only internal DNS and CockroachDB zones, in
// Nexus's target blueprint: rebooting it would leave both below what
// omicron's planner requires (3 and 5), so the host update waits its
// bound, then refuses naming each zone's kind and counts; the SP is not
// reset, the host not rebooted, nothing written to its slots. The dry run
// shows the refusal; a sled without those zones updates.
func TestHostFlashRefusesTheSledWithTheOnlyDNSAndCockroach(t *testing.T) {
	const cubby, other = 2, 1
	st := newMGSStack(t, func(s *spec.Spec) {
		onlyOn(&s.Racks[0], cubby, mgsupdate.ZoneKindInternalDNS, mgsupdate.ZoneKindCockroachDB)
	})
	before := st.truth(cubby)
	in := st.hostInput(cubby)
	in.Timing.ZoneSafetyWait = 2 * time.Second

	plan := rollout.RolloutInput{Name: "zones", Stages: []rollout.Stage{{Name: "host", Kind: workflows.KindHostFlash, Concurrency: 1,
		Updates: []rollout.PlanUpdate{planUpdateOf(t, ptr(in))}}}}
	rows := runDryRun(t, st, plan).Rows()
	require.Len(t, rows, 1)
	assert.Equal(t, activities.PlanRefuse, rows[0].Action)
	assert.Contains(t, rows[0].Reason, "only 1/1 internal DNS zones are synchronized; require at least 3")

	run := st.startWF(workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)
	st.requireFailedWith(run, failure.ZoneUnsafeToShutdown)
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/host-flash-zone-unsafe.json")

	after := st.truth(cubby)
	assert.Equal(t, before.Resets, after.Resets, "the SP was not reset")
	assert.Equal(t, before.Host.Boots, after.Host.Boots, "the host was not rebooted")
	assert.Equal(t, before.Host.Slots, after.Host.Slots, "nothing written to the boot flash")
	assert.Equal(t, before.Host.ActiveSlot, after.Host.ActiveSlot)
	assert.Equal(t, 0, st.sledTruth(cubby).Host.Disks[1].Writes, "no phase 2 written")

	atts, err := st.env.Store.Attempts(context.Background(), run.GetID())
	require.NoError(t, err)
	require.Len(t, atts, 1)
	assert.Equal(t, ledger.StateFailed, atts[0].State)
	assert.Contains(t, atts[0].Error, "cockroach_db zone")
	assert.Contains(t, atts[0].Error, "not enough nodes: 1 in service < 5")
	assert.Contains(t, atts[0].Error, "internal_dns zone")

	ok := st.startWF(workflows.KindHostFlash, st.hostInput(other), mgsupdate.HostBootFlashUpdate)
	res, err := st.result(ok)
	require.NoError(t, err, "a sled without those zones may reboot")
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
}

// withPlannerReport makes a child of the rack's target blueprint whose
// source is a planning report (the vendored document's shape, from
// fleet/nexuslockstep/testdata) holding zone unsafe to shut down for why,
// and makes it the target.
func withPlannerReport(t *testing.T, st *mgsStack, zone uuid.UUID, why map[string]any) uuid.UUID {
	t.Helper()
	raw, err := os.ReadFile("../../fleet/nexuslockstep/testdata/blueprint-planner-report.json")
	require.NoError(t, err)
	var sample struct {
		Source map[string]any `json:"source"`
	}
	require.NoError(t, json.Unmarshal(raw, &sample))
	sample.Source["zone_updates"].(map[string]any)["unsafe_zones"] = map[string]any{zone.String(): why}
	sample.Source["mgs_updates"].(map[string]any)["blocked_mgs_updates"] = []any{}
	lc, tg, bp := st.targetBlueprint()
	raw, err = json.Marshal(bp)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	id := uuid.New()
	m["id"], m["parent_blueprint_id"], m["source"] = id.String(), tg.TargetID.String(), sample.Source
	raw, err = json.Marshal(m)
	require.NoError(t, err)
	child, err := nexuslockstep.ParseBlueprint(raw)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, lc.Import(ctx, child))
	_, err = lc.SetTarget(ctx, id, true)
	require.NoError(t, err)
	return id
}

// Enough internal DNS zones are in service, but the target's planning
// report says the sled's is unsafe to shut down (the planner read the DNS
// servers' generations, which fleetsaga cannot): the host update refuses
// with the planner's reason, and the host is not rebooted.
func TestHostFlashRefusesWhatThePlannersReportHoldsUnsafe(t *testing.T) {
	const cubby = 2
	st := newMGSStack(t)
	dns := st.spec.Racks[0].Sleds[cubby].Zones[1]
	require.Equal(t, mgsupdate.ZoneKindInternalDNS, dns.Kind)
	bp := withPlannerReport(t, st, dns.ID, map[string]any{"type": "internal_dns", "total_internal_dns_zones": 4, "synchronized_count": 2})
	before := st.truth(cubby)
	in := st.hostInput(cubby)
	in.Timing.ZoneSafetyWait = time.Second
	run := st.startWF(workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)
	_, err := st.result(run)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "internal_dns zone "+dns.ID.String()+": the planner's report of target blueprint "+bp.String()+
		": only 2/4 internal DNS zones are synchronized; require at least 3")
	st.requireFailedWith(run, failure.ZoneUnsafeToShutdown)
	after := st.truth(cubby)
	assert.Equal(t, before.Resets, after.Resets)
	assert.Equal(t, before.Host.Boots, after.Host.Boots)
	assert.Equal(t, before.Host.Slots, after.Host.Slots)
}
