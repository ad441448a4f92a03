package mgsupdate_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// The rack's host OS update, end to end on fleetsim's default mode: the
// update completes with phase 2 on disk B (written by sled-agent) and the
// host on slot 1; then an ordinary reboot (power off, power on: no
// recovery mode, no MGS serving anything) boots the new OS again from the
// disk. On the old flow (phase 2 only fetched through the SP once) that
// reboot failed: disk B never held the new phase 2.
func TestHostFlashSurvivesOrdinaryReboot(t *testing.T) {
	const cubby = 2
	st := newMGSStack(t)
	in := st.hostInput(cubby)
	run := st.startWF(workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)
	res, err := st.result(run)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	st.checkLedgerAgrees(run, cubby, res)
	want := phase2ID(t, in.Phase2.Path)
	st.requireRunning(cubby, 1, want)
	h := st.sledTruth(cubby).Host
	assert.Equal(t, in.Phase2.SHA256, h.Disks[1].Artifact, "sled-agent wrote the phase 2 file to disk B")
	assert.Equal(t, 1, h.Disks[1].Writes)
	assert.Equal(t, 1, st.truth(cubby).Resets, "one SP reset restarted the host")

	st.powerCycle(cubby)
	st.requireRunning(cubby, 1, want)
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/host-flash-rack-path.json")
}

// A phase 1 whose phase 2 nobody wrote (it names another image): the host
// does not boot the new slot; once the boot timeout passes it is put back
// on its old slot, boots its old OS from disk A, and the update fails
// saying so. The host is never left on a slot whose disk lacks its pair.
func TestHostFlashFailedBootPutsTheHostBack(t *testing.T) {
	const cubby = 3
	st := newMGSStack(t)
	in := st.hostInputNaming(cubby, simmgs.SHA256Hex([]byte("a phase 2 nobody wrote")))
	in.Timing.NewVersionTimeout = 3 * time.Second
	oldOS := st.truth(cubby).Host.Slots[0]
	run := st.startWF(workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)
	st.requireFailedWith(run, failure.HostBootTimeout)
	st.requirePutBack(run, cubby, oldOS, ledger.StateFailed)
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/host-flash-boot-failed-put-back.json")
}

// requireFailedWith: run ended failed, with the failure type typ.
func (st *mgsStack) requireFailedWith(run client.WorkflowRun, typ string) {
	st.t.Helper()
	_, err := st.result(run)
	var ae *temporal.ApplicationError
	require.ErrorAs(st.t, err, &ae)
	assert.Equal(st.t, typ, ae.Type(), "%v", err)
}

// requireRunning: the host runs phase 1 slot slot and the phase 2 want
// from that slot's disk, and its sled-agent answers with that boot disk.
func (st *mgsStack) requireRunning(cubby, slot int, want string) {
	st.t.Helper()
	require.Eventually(st.t, func() bool { return st.sledTruth(cubby).Host.Up }, 30*time.Second, 10*time.Millisecond)
	tr := st.truth(cubby)
	assert.Equal(st.t, simmgs.HostRunning, tr.Host.State, "%s", tr.Host.BootFailure)
	assert.Equal(st.t, slot, tr.Host.BootedSlot)
	assert.Equal(st.t, simmgs.Phase2FromDisk, tr.Host.Phase2Source)
	assert.Equal(st.t, want, tr.Host.BootedPhase2)
	assert.False(st.t, tr.Host.StartupOptions.Phase2RecoveryMode, "the rack's path never sets recovery mode")
	assert.Equal(st.t, []string{"A", "B"}[slot], st.sledTruth(cubby).Host.BootDisk)
}

// powerCycle is an ordinary reboot by anyone: host off, host on, until
// the host's boot ended.
func (st *mgsStack) powerCycle(cubby int) {
	st.t.Helper()
	ctx := context.Background()
	boots := st.truth(cubby).Host.Boots
	c := fmgs.New(st.sim.URL+"/mgs/0", nil)
	sp := fmgs.SpIdentifier{Type: fmgs.SpTypeSled, Slot: uint16(cubby)}
	require.NoError(st.t, c.SetPowerState(ctx, sp, fmgs.PowerA2))
	require.NoError(st.t, c.SetPowerState(ctx, sp, fmgs.PowerA0))
	require.Eventually(st.t, func() bool {
		tr := st.truth(cubby)
		return tr.Host.Boots > boots && tr.Host.State != simmgs.HostBooting
	}, 30*time.Second, 10*time.Millisecond)
}

// requirePutBack: the update ended in state, its host back on slot 0 with
// its old OS (phase 1 image old, the phase 2 disk A held from the start),
// the ledger saying so.
func (st *mgsStack) requirePutBack(run client.WorkflowRun, cubby int, old simmgs.SlotTruth, state ledger.State) {
	st.t.Helper()
	st.requireRunning(cubby, 0, sled.Phase2HeaderID(sled.InitialPhase2(old.Version)))
	tr := st.truth(cubby)
	assert.Equal(st.t, old.SHA256, tr.Host.Slots[0].SHA256, "the old phase 1, untouched")
	assert.Equal(st.t, 0, tr.Host.ActiveSlot)
	atts, err := st.env.Store.Attempts(context.Background(), run.GetID())
	require.NoError(st.t, err)
	last := atts[len(atts)-1]
	assert.Equal(st.t, state, last.State)
	assert.Contains(st.t, last.Error, "host put back on phase 1 slot 0, its old OS")
}

// sledTruth is fleetsim's truth of the sled in cubby (its host, disks and
// sled-agent).
func (st *mgsStack) sledTruth(cubby int) sled.SledTruth {
	st.t.Helper()
	id := st.spec.Racks[0].Sleds[cubby].ID
	for _, s := range st.sim.Truth()[sled.Name].(sled.Truth).Sleds {
		if s.ID == id {
			return s
		}
	}
	st.t.Fatalf("no sled %s in fleetsim's truth", id)
	return sled.SledTruth{}
}

// With Nexus's executor owning the sled's config (owner mode),
// the phase 2 is named in a child of the target blueprint, not PUT behind
// Nexus's back: the executor sends it to the sled, sled-agent writes disk
// B, and the update completes as in direct mode.
func TestHostFlashThroughTheTargetBlueprint(t *testing.T) {
	const cubby = 2
	st := newMGSStack(t, func(s *spec.Spec) {
		s.Racks[0].Owners = spec.RackOwners{Nexus: spec.On(), Executor: spec.On(), MGSUpdates: spec.Off()}
	})
	in := st.hostInput(cubby)
	run := st.startWF(workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)
	res, err := st.result(run)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	st.requireRunning(cubby, 1, phase2ID(t, in.Phase2.Path))

	_, _, bp := st.targetBlueprint()
	sc := bp.Sleds[st.spec.Racks[0].Sleds[cubby].ID]
	assert.Equal(t, "artifact", sc.HostPhase2["slot_b"].Type, "the target names the phase 2 for disk B")
	assert.Equal(t, in.Phase2.SHA256, sc.HostPhase2["slot_b"].Hash)
	assert.Equal(t, in.Phase2.SHA256, st.sledTruth(cubby).Host.Disks[1].Artifact)
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/host-flash-through-blueprint.json")
}
