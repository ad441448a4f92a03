package mgsupdate_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/nexuslockstep"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// withPendingNexusUpdate makes a child of the rack's target blueprint with a
// pending MGS update of the sled's SP the target (Nexus's MGS driver is off
// in the spec, so it stays pending: Nexus owns the device meanwhile).
func withPendingNexusUpdate(t *testing.T, st *mgsStack, cubby int) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	lc, tg, bp := st.targetBlueprint()
	raw, err := json.Marshal(bp)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	sl := st.spec.Racks[0].Sleds[cubby]
	id := uuid.New()
	m["id"], m["parent_blueprint_id"] = id.String(), tg.TargetID.String()
	m["pending_mgs_updates"] = map[string]any{"by_baseboard": []any{map[string]any{
		"artifact_hash":    "8f2c0a7e5b1d4c3a9e6f7b8c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e",
		"artifact_version": "2.0.0",
		"baseboard_id":     map[string]any{"part_number": sl.Part, "serial_number": sl.Serial},
		"details":          map[string]any{"component": "sp", "expected_active_version": sl.SP.Active, "expected_inactive_version": map[string]any{"kind": "version", "version": sl.SP.Inactive}},
		"slot_id":          sl.Cubby,
		"sp_type":          "sled",
	}}}
	raw, err = json.Marshal(m)
	require.NoError(t, err)
	child, err := nexuslockstep.ParseBlueprint(raw)
	require.NoError(t, err)
	require.NoError(t, lc.Import(ctx, child))
	_, err = lc.SetTarget(ctx, id, true)
	require.NoError(t, err)
	return id
}

// A device for which the target blueprint has a pending MGS
// update belongs to Nexus's MGS update driver: the SP firmware update is
// refused with the owner named, before anything is sent to the SP, and the
// dry run's precheck shows the owner. Another sled's SP updates as usual.
func TestSPFirmwareRefusesADeviceNexusIsUpdating(t *testing.T) {
	st := newMGSStack(t, func(s *spec.Spec) { s.Racks[0].Owners = spec.RackOwners{Executor: spec.Off(), MGSUpdates: spec.Off()} })
	bp := withPendingNexusUpdate(t, st, 2)
	before := st.truth(2)

	run := st.startWF(workflows.KindSPFirmware, st.spInput(2, "1.1.0"), mgsupdate.SPFirmwareUpdate)
	_, err := st.result(run)
	require.Error(t, err)
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/sp-firmware-owned-by-nexus.json")
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	assert.Equal(t, failure.OwnedByNexus, app.Type())
	assert.Contains(t, app.Error(), "belongs to Nexus: target blueprint "+bp.String()+" has a pending MGS update of its sp to 2.0.0")
	after := st.truth(2)
	assert.Equal(t, before.SP.Active.Version, after.SP.Active.Version)
	assert.Empty(t, completed(after.Deliveries), "nothing sent to the SP")
	assert.Equal(t, before.Resets, after.Resets)

	// The dry run refuses it, naming the owner.
	plan := rollout.RolloutInput{Name: "owned", Stages: []rollout.Stage{{Name: "sp", Kind: workflows.KindSPFirmware, Concurrency: 1,
		Updates: []rollout.PlanUpdate{planUpdateOf(t, ptr(st.spInput(2, "1.1.0")))}}}}
	rows := runDryRun(t, st, plan).Rows()
	require.Len(t, rows, 1)
	assert.Equal(t, activities.PlanRefuse, rows[0].Action)
	assert.Contains(t, rows[0].Reason, "belongs to Nexus: target blueprint "+bp.String())

	other := st.startWF(workflows.KindSPFirmware, st.spInput(1, "1.1.0"), mgsupdate.SPFirmwareUpdate)
	res, err := st.result(other)
	require.NoError(t, err, "a device Nexus does not update is fleetsaga's")
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
}

func ptr[T any](v T) *T { return &v }

// targetBlueprint reads the rack's target blueprint through fleetsim's
// lockstep API.
func (st *mgsStack) targetBlueprint() (*nexuslockstep.Client, nexuslockstep.Target, *nexuslockstep.Blueprint) {
	st.t.Helper()
	ctx := context.Background()
	lc := nexuslockstep.New(st.sim.URL+"/nexus/"+st.spec.Racks[0].ID, nil)
	tg, err := lc.Target(ctx)
	require.NoError(st.t, err)
	bp, err := lc.Blueprint(ctx, tg.TargetID)
	require.NoError(st.t, err)
	return lc, tg, bp
}
