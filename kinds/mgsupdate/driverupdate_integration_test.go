package mgsupdate_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// The test cases of omicron's nexus/mgs-updates/src/driver_update.rs
// (SP) and driver_update/test_host_phase_1.rs (host phase 1), on fleetsim
// (docs/CONFORMANCE.md §B lists each one and where it went). omicron runs
// two drivers against one simulated SP; here the other driver is
// fleetsim's foreign actor (fault foreign_update), which activates its
// update as Nexus's driver does, or is gone (no Latency: nobody does).

// failure case of a basic_failures test: a change of the input and the
// typed error it ends with, the device untouched (failsWith).
type failureCase[I workflows.UpdateInput] struct {
	name string
	edit func(st *mgsStack, in *I)
	typ  string
	msg  string
}

func runFailureCases[I workflows.UpdateInput](t *testing.T, st *mgsStack, cubby int, kind workflows.Kind, wf any, input func() I, cases []failureCase[I]) {
	defer func() { st.t = t }()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st.t = t
			in := input()
			c.edit(st, &in)
			msg := st.failsWith(kind, in, wf, cubby, c.typ)
			assert.Contains(t, msg, c.msg)
		})
	}
}

// omicron test_sp_basic_failures: each precondition that does not hold
// ends the update with its error before anything reaches the SP.
func TestSPUpdateBasicFailuresAgainstFleetsim(t *testing.T) {
	const cubby = 2
	st := newMGSStack(t)
	input := func() mgsupdate.SPFirmwareInput { return st.spInput(cubby, "1.1.0") }
	type sp = mgsupdate.SPFirmwareInput
	runFailureCases(t, st, cubby, workflows.KindSPFirmware, mgsupdate.SPFirmwareUpdate, input, []failureCase[sp]{
		{"mistaken identity", func(_ *mgsStack, in *sp) { in.SP.Serial = "BRM-NOT-THIS-ONE" },
			failure.WrongDevice, `expected serial "BRM-NOT-THIS-ONE"`},
		{"active version", func(_ *mgsStack, in *sp) { in.ExpectedActive = "not-right" },
			failure.WrongActiveVersion, "expected not-right, found " + spec.GeneratedSPActive},
		{"inactive expected invalid", func(_ *mgsStack, in *sp) { in.ExpectedInactive = mgsupdate.NoValidVersion },
			failure.WrongInactiveVersion, "expected invalid, found " + spec.GeneratedSPInactive},
		{"inactive another version", func(_ *mgsStack, in *sp) { in.ExpectedInactive = "something-else" },
			failure.WrongInactiveVersion, "expected something-else, found " + spec.GeneratedSPInactive},
		{"artifact unavailable", func(st *mgsStack, in *sp) { require.NoError(st.t, os.Remove(in.Artifact.Path)) },
			failure.ArtifactUnavailable, "sp-1.1.0.bin"},
	})
}

// omicron test_host_phase_1.rs basic_failures, where fleetsaga's input
// names the expectation (its phase 1 slot, boot disk and phase 2 are not
// input: the precheck reads them; docs/CONFORMANCE.md says so).
func TestHostPhase1BasicFailuresAgainstFleetsim(t *testing.T) {
	const cubby = 3
	st := newMGSStack(t)
	disks := st.sledTruth(cubby).Host.Disks
	input := func() mgsupdate.HostFlashInput { return st.hostInput(cubby) }
	type host = mgsupdate.HostFlashInput
	bad := strings.Repeat("ff", 32)
	runFailureCases(t, st, cubby, workflows.KindHostFlash, mgsupdate.HostBootFlashUpdate, input, []failureCase[host]{
		{"mistaken identity", func(_ *mgsStack, in *host) { in.Sled.Serial = "BRM-NOT-THIS-ONE" },
			failure.WrongDevice, `expected serial "BRM-NOT-THIS-ONE"`},
		{"active phase 1 artifact", func(_ *mgsStack, in *host) { in.ExpectedActive = bad },
			failure.WrongActiveVersion, "expected " + bad},
		{"inactive phase 1 artifact", func(_ *mgsStack, in *host) { in.ExpectedInactive = bad },
			failure.WrongInactiveVersion, "expected " + bad},
		{"artifact unavailable", func(st *mgsStack, in *host) { require.NoError(st.t, os.Remove(in.Phase1.Path)) },
			failure.ArtifactUnavailable, "phase1.bin"},
	})
	assert.Equal(t, disks, st.sledTruth(cubby).Host.Disks, "no phase 2 written")
}

// runAgainstForeign arms fleetsim's foreign actor on the cubby's SP and
// runs the update: the foreign update starts first, at our start.
func (st *mgsStack) runAgainstForeign(cubby int, f faults.Fault, kind workflows.Kind, in workflows.UpdateInput, wf any) (client.WorkflowRun, mgsupdate.MGSUpdateResult, error) {
	st.t.Helper()
	f.Kind, f.Target, f.Times = faults.ForeignUpdate, in.Target(), 1
	st.arm(f)
	run := st.startWF(kind, in, wf)
	res, err := st.result(run)
	return run, res, err
}

// onlyForeignDelivered: the SP saw one update, the foreign one, which res
// names.
func (st *mgsStack) onlyForeignDelivered(cubby int, res mgsupdate.MGSUpdateResult) {
	st.t.Helper()
	ds := st.truth(cubby).Deliveries
	require.Len(st.t, ds, 1)
	assert.True(st.t, ds[0].Foreign)
	assert.Equal(st.t, ds[0].UpdateID.String(), res.UpdateID)
}

// omicron test_host_phase_1.rs update_watched: another driver of the same
// update activates it while we watch; ours waits it out and sends
// nothing. Run again, it finds no change needed.
func TestHostPhase1UpdateWatchedAgainstFleetsim(t *testing.T) {
	const cubby = 2
	st := newMGSStack(t)
	in := st.hostInput(cubby)
	run, res, err := st.runAgainstForeign(cubby, faults.Fault{Latency: "300ms"}, workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeWaitedConcurrent, res.Outcome)
	st.onlyForeignDelivered(cubby, res)
	st.requireRunning(cubby, 1, phase2ID(t, in.Phase2.Path))
	assert.Equal(t, 1, st.truth(cubby).Resets, "the other driver's reset, not ours")
	st.checkLedgerAgrees(run, cubby, res)

	again := st.startWF(workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)
	res, err = st.result(again)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeNoChangeNeeded, res.Outcome)
	assert.Equal(t, 1, st.truth(cubby).Resets)
}

// omicron test_host_phase_1.rs update_takeover: the other driver wrote
// our phase 1 and is gone; after the takeover timeout ours activates it
// with exactly one SP reset (omicron: two power state changes, one host
// restart), not by writing its own over it.
func TestHostPhase1UpdateTakeoverAgainstFleetsim(t *testing.T) {
	const cubby = 2
	st := newMGSStack(t)
	in := st.hostInput(cubby)
	run, res, err := st.runAgainstForeign(cubby, faults.Fault{}, workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeTookOver, res.Outcome)
	st.onlyForeignDelivered(cubby, res)
	st.requireRunning(cubby, 1, phase2ID(t, in.Phase2.Path))
	tr := st.truth(cubby)
	assert.Equal(t, 1, tr.Resets, "exactly one reset")
	assert.Equal(t, 1, tr.Host.ActiveSlot)
	st.checkLedgerAgrees(run, cubby, res)
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/host-flash-takeover.json")
}

// A concurrent host update of another version moves the active slot to
// the slot whose disk got our phase 2. Writing our phase 1 to the other
// slot would pair it with a disk that never got phase 2; the update fails
// WrongActiveSlot instead (omicron host_phase1_updater.rs:
// WrongActiveHostPhase1Slot), the host left on the other update.
func TestHostFlashAgainstFleetsimActiveSlotMovedByAnotherUpdate(t *testing.T) {
	const cubby = 3
	st := newMGSStack(t)
	in := st.hostInput(cubby)
	run, _, _ := st.runAgainstForeign(cubby, faults.Fault{Version: "1.5.0", Latency: "100ms"}, workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)
	st.requireFailedWith(run, failure.WrongActiveSlot)
	tr := st.truth(cubby)
	assert.Equal(t, 1, tr.Host.ActiveSlot)
	assert.Equal(t, "1.5.0", tr.Host.Slots[1].Version)
	assert.Equal(t, 1, tr.Resets, "the other update's reset only")
	assert.Empty(t, completed(tr.Deliveries), "our phase 1 never sent")
	requireLastAttempt(t, st, run, ledger.StateFailed, "another update moved it")
}

// An SP update expecting the active version fails WrongActiveVersion when
// a concurrent update left a third version (omicron driver_update.rs,
// wait_for_update_done: WrongActiveVersion is not waited out); nothing of
// ours reaches the SP.
func TestSPFirmwareAgainstFleetsimExpectedActiveAfterThirdVersion(t *testing.T) {
	const cubby = 2
	st := newMGSStack(t)
	in := st.spInput(cubby, "1.1.0")
	in.ExpectedActive = spec.GeneratedSPActive
	run, _, _ := st.runAgainstForeign(cubby, faults.Fault{Version: "1.0.5", Latency: "100ms"}, workflows.KindSPFirmware, in, mgsupdate.SPFirmwareUpdate)
	st.requireFailedWith(run, failure.WrongActiveVersion)
	tr := st.truth(cubby)
	assert.Equal(t, "1.0.5", tr.SP.Active.Version)
	assert.Equal(t, 1, tr.Resets, "the other update's reset only")
	assert.Empty(t, completed(tr.Deliveries))
	requireLastAttempt(t, st, run, ledger.StateFailed, "expected 1.0.0, found 1.0.5")
}

// requireLastAttempt: the run's last ledger attempt ended in state, its
// error containing msg.
func requireLastAttempt(t *testing.T, st *mgsStack, run client.WorkflowRun, state ledger.State, msg string) {
	t.Helper()
	atts, err := st.env.Store.Attempts(context.Background(), run.GetID())
	require.NoError(t, err)
	require.NotEmpty(t, atts)
	last := atts[len(atts)-1]
	assert.Equal(t, state, last.State)
	assert.Contains(t, last.Error, msg)
}
