package mgsupdate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/nexusexternal"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// noNexusDrivers keeps fleetsim's Nexus from acting on its own: only the
// target release says who owns the devices.
func noNexusDrivers(s *spec.Spec) {
	s.Racks[0].Owners = spec.RackOwners{Executor: spec.Off(), MGSUpdates: spec.Off()}
}

// setTargetRelease gives the rack a target release through its Nexus's
// external API, as an operator does.
func (st *mgsStack) setTargetRelease(version string) {
	st.t.Helper()
	c := nexusexternal.New(st.sim.URL+"/nexus/"+st.spec.Racks[0].ID+"/external", st.env.NexusTokenFile(), nil)
	require.NoError(st.t, c.SetTargetRelease(context.Background(), version))
}

// rackOwnsIt is the refusal's text naming the rack (as the worker finds it:
// its rack_id in the sled table) and the release.
func (st *mgsStack) rackOwnsIt(version string) string {
	return "belongs to rack " + sled.RackUUID(st.spec.Racks[0].ID).String() + "'s own update system: the rack has target release " + version
}

// historyText is a workflow's history as text, every payload decoded (an
// export a reader greps).
func (st *mgsStack) historyText(id string) string {
	st.t.Helper()
	var b strings.Builder
	iter := st.env.Client.GetWorkflowHistory(context.Background(), id, "", false, 0)
	hist := &historypb.History{}
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(st.t, err)
		hist.Events = append(hist.Events, ev)
	}
	raw, err := protojson.Marshal(hist)
	require.NoError(st.t, err)
	b.Write(raw)
	var payloads func(m protoreflect.Message)
	payloads = func(m protoreflect.Message) {
		if p, ok := m.Interface().(*commonpb.Payload); ok {
			b.WriteString("\n")
			b.Write(p.GetData())
			return
		}
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := 0; i < v.List().Len(); i++ {
					payloads(v.List().Get(i).Message())
				}
			case fd.IsMap() && fd.MapValue().Message() != nil:
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					payloads(mv.Message())
					return true
				})
			case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
				payloads(v.Message())
			}
			return true
		})
	}
	payloads(hist.ProtoReflect())
	return b.String()
}

// On a rack with a target release, Nexus's planner updates the SPs and
// hosts toward it: SP firmware and host flash are refused at their
// precheck, with the rack and the release named, and nothing reaches the
// device. The starter refuses before starting (exit 2); started anyway
// (--no-precheck) the update fails with the type (exit 1); the dry run's
// row says why (exit 7).
func TestUpdatesRefusedOnARackWithATargetRelease(t *testing.T) {
	const cubby = 2
	st := newMGSStack(t, noNexusDrivers)
	st.setTargetRelease("18.0.0")
	in := st.spInput(cubby, "1.1.0")
	before := st.truth(cubby)

	args := []string{"sp-firmware", "--sled", "2", "--serial", in.SP.Serial, "--artifact", in.Artifact.Path, "--version", in.Artifact.Version}
	out, code := st.starterExit(args...)
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "refused before starting, nothing was changed")
	assert.Contains(t, out, st.rackOwnsIt("18.0.0"))
	assert.Contains(t, out, "through the rack's update system (Nexus's target release)")

	out, code = st.starterExit(append(args, "--dry-run")...)
	assert.Equal(t, 7, code, "a dry run's exit for a refused target: %s", out)
	assert.Contains(t, out, "target release 18.0.0")

	out, code = st.starterExit(append(args, "--no-precheck", "--wait")...)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, failure.OwnedByTargetRelease+": SP sled/2 (serial "+in.SP.Serial+") "+st.rackOwnsIt("18.0.0"))

	after := st.truth(cubby)
	assert.Equal(t, before.SP, after.SP, "the SP untouched")
	assert.Empty(t, completed(after.Deliveries), "nothing sent to the SP")
	assert.Equal(t, before.Resets, after.Resets)

	msg := st.failsWith(workflows.KindHostFlash, st.hostInput(3), mgsupdate.HostBootFlashUpdate, 3, failure.OwnedByTargetRelease)
	assert.Contains(t, msg, st.rackOwnsIt("18.0.0"))

	plan := rollout.RolloutInput{Name: "released", Stages: []rollout.Stage{{Name: "sp", Kind: workflows.KindSPFirmware, Concurrency: 1,
		Updates: []rollout.PlanUpdate{planUpdateOf(t, ptr(st.spInput(1, "1.1.0")))}}}}
	rows := runDryRun(t, st, plan).Rows()
	require.Len(t, rows, 1)
	assert.Equal(t, activities.PlanRefuse, rows[0].Action)
	assert.Contains(t, rows[0].Reason, st.rackOwnsIt("18.0.0"))
}

// A target release set while our image is delivered does not stop the
// reset: a delivered SP image is armed, and the next SP reset by anyone
// (Nexus's host phase 1 update resets the SP: omicron
// nexus/mgs-updates/src/host_phase1_updater.rs) would activate it behind a
// ledger that said stopped. So the update completes: the SP runs the new
// version, the ledger's attempt completed with an event naming the
// release, the result names it, a later reset changes nothing, and the API
// token appears nowhere in the workflow's history.
func TestSPFirmwareDeliveredBeforeATargetReleaseIsActivatedNotLeftArmed(t *testing.T) {
	const cubby = 1
	st := newMGSStack(t, noNexusDrivers, func(s *spec.Spec) {
		s.Timings.FlashBytesPerSecond = 256 // ×100: 256 KiB in about 10 s
	})
	in := st.spInput(cubby, "1.1.0")
	run := st.startWF(workflows.KindSPFirmware, in, mgsupdate.SPFirmwareUpdate)
	st.awaitDelivering(cubby)
	st.setTargetRelease("18.0.0")

	res, err := st.result(run)
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/sp-firmware-target-release-after-delivery.json")
	require.NoError(t, err)
	assert.Equal(t, "18.0.0", res.TargetReleaseAppeared)

	after := st.truth(cubby)
	assert.Equal(t, "1.1.0", after.SP.Active.Version, "the delivered image was activated")
	assert.Len(t, completed(after.Deliveries), 1)
	st.resetSP(cubby) // what Nexus's host phase 1 update does next
	require.Eventually(t, func() bool { return !st.truth(cubby).Rebooting }, 60*time.Second, 50*time.Millisecond)
	assert.Equal(t, "1.1.0", st.truth(cubby).SP.Active.Version, "the next reset changes nothing the ledger does not say")

	atts, err := st.env.Store.Attempts(context.Background(), run.GetID())
	require.NoError(t, err)
	require.NotEmpty(t, atts)
	last := atts[len(atts)-1]
	assert.Equal(t, ledger.StateCompleted, last.State)
	evs, err := st.env.Store.Events(context.Background(), last.ID)
	require.NoError(t, err)
	var note string
	for _, e := range evs {
		if e.Step == "target-release-appeared" {
			note = e.Message
		}
	}
	assert.Contains(t, note, "got target release 18.0.0 while update")
	assert.Contains(t, note, "the SP was reset to activate it anyway")

	hist := st.historyText(run.GetID())
	assert.Contains(t, hist, in.SP.Serial, "the export holds the payloads")
	assert.NotContains(t, hist, st.env.NexusToken())
}

// A worker whose token the rack refuses, or that has none, or no external
// endpoint at all, stops the update at its precheck with one clear error
// naming what to fix (the token's file, never the token), and nothing
// reaches the SP. The token is in no history.
func TestSPFirmwareWithoutAValidNexusTokenStops(t *testing.T) {
	dir := t.TempDir()
	wrong := filepath.Join(dir, "wrong-token")
	require.NoError(t, os.WriteFile(wrong, []byte("oxide-token-not-the-racks\n"), 0o600))
	missing := filepath.Join(dir, "no-such-token")
	for _, c := range []struct {
		name string
		edit func(e *fleet.Endpoints, simURL string)
		typ  string
		want string
	}{
		{"wrong token", func(e *fleet.Endpoints, _ string) { e.NexusExternalTokenFile = wrong }, failure.NexusExternalRejected,
			"401 Unauthorized: credentials missing or invalid; the API token in " + wrong + " was refused"},
		{"missing token file", func(e *fleet.Endpoints, _ string) { e.NexusExternalTokenFile = missing }, failure.NexusExternalRejected,
			"token file " + missing},
		{"no endpoint", func(e *fleet.Endpoints, _ string) { e.NexusExternal = "" }, failure.OwnerUnknown, "--nexus-external"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newMGSStackFleet(t, workerapp.Deps{}, c.edit, noNexusDrivers)
			in := st.spInput(1, "1.1.0")
			before := st.truth(1)
			run := st.startWF(workflows.KindSPFirmware, in, mgsupdate.SPFirmwareUpdate)
			_, err := st.result(run)
			var app *temporal.ApplicationError
			require.True(t, errors.As(err, &app), "%v", err)
			assert.Equal(t, c.typ, app.Type(), "%v", err)
			assert.Contains(t, app.Error(), c.want)
			after := st.truth(1)
			assert.Equal(t, before.SP, after.SP)
			assert.Empty(t, completed(after.Deliveries), "nothing sent to the SP")

			hist := st.historyText(run.GetID())
			assert.Contains(t, hist, in.SP.Serial)
			assert.NotContains(t, hist, "oxide-token-not-the-racks")
			assert.NotContains(t, hist, st.env.NexusToken())
		})
	}
}

// A target release set while a host flash writes phase 1 stops it before
// the new slot is made active: the host keeps its slot and is not
// rebooted, and the ledger's attempt failed with the reason.
func TestHostFlashStopsBeforeTheBootWhenATargetReleaseAppears(t *testing.T) {
	const cubby = 2
	st := newMGSStack(t, func(s *spec.Spec) {
		s.Racks[0].Owners = spec.RackOwners{MGSUpdates: spec.Off()}
		s.Timings.FlashBytesPerSecond = 256 // ×100: 128 KiB in about 5 s
	})
	in := st.hostInput(cubby)
	before := st.truth(cubby)
	run := st.startWF(workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)
	st.awaitDelivering(cubby)
	st.setTargetRelease("18.0.0")

	_, err := st.result(run)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	assert.Equal(t, failure.OwnedByTargetRelease, app.Type())
	assert.Contains(t, app.Error(), "stopped before activating the new image")
	assert.Contains(t, app.Error(), st.rackOwnsIt("18.0.0"))

	after := st.truth(cubby)
	assert.Equal(t, before.Host.ActiveSlot, after.Host.ActiveSlot, "the active slot unchanged")
	assert.Equal(t, before.Host.PersistentSlot, after.Host.PersistentSlot)
	assert.Equal(t, before.Host.Boots, after.Host.Boots, "the host was not rebooted")
	assert.Equal(t, before.Resets, after.Resets, "the SP was not reset")

	atts, err := st.env.Store.Attempts(context.Background(), run.GetID())
	require.NoError(t, err)
	require.NotEmpty(t, atts)
	assert.Equal(t, ledger.StateFailed, atts[len(atts)-1].State)
	assert.Contains(t, atts[len(atts)-1].Error, "target release 18.0.0")
}

// A token is valid on one rack only: with {rack} in the token file's path
// the worker reads each rack's own file (named by its rack_id), so the
// rack's target release is read and refuses the update, where one shared
// file would be refused (401) by every rack but its own.
func TestSPFirmwareReadsTheTokenFileOfItsRack(t *testing.T) {
	dir := t.TempDir()
	st := newMGSStackFleet(t, workerapp.Deps{}, func(e *fleet.Endpoints, _ string) {
		e.NexusExternalTokenFile = filepath.Join(dir, "{rack}.token")
	}, noNexusDrivers)
	rack := sled.RackUUID(st.spec.Racks[0].ID).String()
	require.NoError(t, os.WriteFile(filepath.Join(dir, rack+".token"), []byte(st.env.NexusToken()+"\n"), 0o600))
	st.setTargetRelease("18.0.0")
	msg := st.failsWith(workflows.KindSPFirmware, st.spInput(1, "1.1.0"), mgsupdate.SPFirmwareUpdate, 1, failure.OwnedByTargetRelease)
	assert.Contains(t, msg, st.rackOwnsIt("18.0.0"))
}
