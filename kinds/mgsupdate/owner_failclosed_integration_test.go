package mgsupdate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// failsWith runs the update to its end: it fails with the typed error typ,
// and the device is as before (nothing sent, no reset, the same slots).
func (st *mgsStack) failsWith(kind workflows.Kind, in workflows.UpdateInput, wf any, cubby int, typ string) string {
	st.t.Helper()
	before := st.truth(cubby)
	_, err := st.result(st.startWF(kind, in, wf))
	var app *temporal.ApplicationError
	require.True(st.t, errors.As(err, &app), "%v", err)
	assert.Equal(st.t, typ, app.Type(), "%v", err)
	after := st.truth(cubby)
	assert.Equal(st.t, before.SP, after.SP)
	assert.Equal(st.t, before.Host.Slots, after.Host.Slots)
	assert.Empty(st.t, completed(after.Deliveries), "nothing sent to the SP")
	assert.Equal(st.t, before.Resets, after.Resets)
	active, err := st.env.Store.ActiveForTarget(context.Background(), in.Target())
	require.NoError(st.t, err)
	assert.Nil(st.t, active, "no attempt left active")
	return app.Error()
}

// On today's rack (Nexus on), an SP update whose owner is not known stops
// with the configuration to fix before anything reaches the SP: no
// lockstep endpoint and no direct mode, or an endpoint that is not the
// lockstep API.
func TestSPFirmwareWithoutAKnownOwnerStops(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(e *fleet.Endpoints, simURL string)
		want string
	}{
		{"no endpoint", func(e *fleet.Endpoints, _ string) { e.NexusLockstep = "" }, "--direct-mode"},
		{"not the lockstep API", func(e *fleet.Endpoints, simURL string) { e.NexusLockstep = simURL + "/nexus-internal/{rack}" },
			"is not Nexus's lockstep API"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newMGSStackFleet(t, workerapp.Deps{}, c.edit)
			msg := st.failsWith(workflows.KindSPFirmware, st.spInput(1, "1.1.0"), mgsupdate.SPFirmwareUpdate, 1, failure.OwnerUnknown)
			assert.Contains(t, msg, c.want)
		})
	}
}

// A disabled target stops a host flash at its precheck, before phase 1 is
// written: its phase 2 would be named through that target, and a disabled
// target is an operator's pause. It stops an SP update too, though this
// target plans none for the device: Nexus skips executing a disabled
// target, so its MGS update driver may still hold the last enabled
// target's updates (omicron nexus/src/app/background/tasks/blueprint_execution.rs,
// nexus/reconfigurator/execution/src/lib.rs register_mgs_update_step).
func TestSPAndHostUpdatesStopAtADisabledTarget(t *testing.T) {
	st := newMGSStack(t, func(s *spec.Spec) { s.Racks[0].Owners = spec.RackOwners{MGSUpdates: spec.Off()} })
	lc, tg, _ := st.targetBlueprint()
	_, err := lc.SetTargetEnabled(context.Background(), tg.TargetID, false)
	require.NoError(t, err)

	msg := st.failsWith(workflows.KindHostFlash, st.hostInput(2), mgsupdate.HostBootFlashUpdate, 2, failure.TargetDisabled)
	assert.Contains(t, msg, "target blueprint "+tg.TargetID.String()+" is disabled")
	_, now, _ := st.targetBlueprint()
	assert.False(t, now.Enabled, "fleetsaga did not enable the target")
	assert.Equal(t, tg.TargetID, now.TargetID, "no blueprint of fleetsaga's made the target")

	msg = st.failsWith(workflows.KindSPFirmware, st.spInput(1, "1.1.0"), mgsupdate.SPFirmwareUpdate, 1, failure.TargetDisabled)
	assert.Contains(t, msg, "target blueprint "+tg.TargetID.String()+" is disabled")
	assert.Contains(t, msg, "MGS update driver may still be updating")
}
