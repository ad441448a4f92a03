package mgsupdate_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
)

// These tests run the activities against fleetsim speaking today's MGS
// contract, where SP refusals come back as 503 SpCommunicationFailed.

// An inactive slot without a valid image (normal after a reset
// mid-update) is an answer of the precheck, in one attempt, not a
// transient error to retry for half an hour.
func TestMGSPrecheckReadsInvalidInactiveSlot(t *testing.T) {
	m := newMGSAct(t, func(s *spec.Spec) { s.Racks[0].Sleds[2].SP.Inactive = "" })
	pre, err := exec[mgsupdate.PrecheckResult](m, m.a.MGSPrecheck, mgsupdate.PrecheckInput{SP: sled2, Component: mgs.ComponentSP})
	require.NoError(t, err)
	assert.True(t, pre.Active.Valid)
	assert.False(t, pre.Inactive.Valid, "no valid image in the inactive slot")
	assert.Empty(t, pre.Inactive.Version)
}

// An abort the SP refuses is told apart from a transient failure by the
// SP's status, re-read: too late after completion, not current while
// another update runs.
func TestMGSAbortDecidedFromTheSPState(t *testing.T) {
	m := newMGSAct(t)
	id := uuid.New()
	m.start(m.artifact("1.1.0"), id)
	require.Equal(t, mgsupdate.WaitComplete, m.wait(id, true).Outcome)
	res, err := exec[string](m, m.a.MGSAbortUpdate, mgsupdate.AbortInput{SP: sled2, Component: mgs.ComponentSP, UpdateID: id, Reason: "test"})
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.AbortTooLate, res)
	assert.Equal(t, "complete", m.truth().Updates["sp"]["state"], "a complete update stays complete")

	m2 := newMGSAct(t)
	running := uuid.New()
	m2.start(m2.artifact("1.1.0"), running)
	res, err = exec[string](m2, m2.a.MGSAbortUpdate, mgsupdate.AbortInput{SP: sled2, Component: mgs.ComponentSP, UpdateID: uuid.New(), Reason: "test"})
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.AbortNotCurrent, res)
	assert.Equal(t, mgsupdate.WaitComplete, m2.wait(running, true).Outcome, "the running update was left alone")
}

// Host boot flash: the precheck knows slots by their phase 1 hash; the
// post-update sets phase2_recovery_mode so the host fetches phase 2
// through the SP, and the wait clears it once the SP reports the boot.
func TestHostRecoveryModeForTheBootOnly(t *testing.T) {
	m := newMGSAct(t)
	p1sum, p2Ref, _ := m.flashHostPhase1(t)

	pre, err := exec[mgsupdate.PrecheckResult](m, m.a.MGSPrecheck, mgsupdate.PrecheckInput{SP: sled2, Component: mgs.ComponentHostBootFlash})
	require.NoError(t, err)
	assert.Equal(t, p1sum, pre.Inactive.SHA256, "the written slot is known by its phase 1 hash")
	assert.Empty(t, pre.Inactive.Version, "the host boot flash has no caboose")

	_, err = m.env.ExecuteActivity(m.a.HostPostUpdate, mgsupdate.HostPostUpdateInput{SP: sled2, NewSlot: 1, Phase2: p2Ref})
	require.NoError(t, err)
	assert.True(t, m.truth().Host.StartupOptions.Phase2RecoveryMode, "set before the power cycle")
	res, err := exec[mgsupdate.HostWaitBootResult](m, m.a.HostWaitBoot, mgsupdate.HostWaitBootInput{
		SP: sled2, NewSlot: 1, Phase2ID: phase2ID(t, p2Ref.Path), Timeout: 10 * time.Second, PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	assert.True(t, res.Booted)
	assert.EqualValues(t, 64<<10, res.Offset, "progress reaches 100%")
	tr := m.truth()
	assert.Equal(t, simmgs.Phase2FromRecovery, tr.Host.Phase2Source)
	assert.Equal(t, phase2ID(t, p2Ref.Path), tr.Host.BootedPhase2, "the host booted the phase 2 its phase 1 names (by header SHA-256)")
	assert.False(t, tr.Host.StartupOptions.Phase2RecoveryMode, "cleared once the SP reports the boot")

	// A boot that never completes leaves no recovery mode behind either.
	c := mgs.New(m.sim.URL+"/mgs/1", nil)
	opts, err := c.StartupOptions(context.Background(), sled2)
	require.NoError(t, err)
	opts.Phase2RecoveryMode = true
	require.NoError(t, c.SetStartupOptions(context.Background(), sled2, opts))
	_, err = m.env.ExecuteActivity(m.a.HostWaitBoot, mgsupdate.HostWaitBootInput{
		SP: sled2, NewSlot: 1, Phase2ID: "ab" + phase2ID(t, p2Ref.Path)[2:], Timeout: 200 * time.Millisecond, PollInterval: 10 * time.Millisecond})
	assert.Equal(t, failure.HostBootTimeout, mgsErrType(err))
	assert.False(t, m.truth().Host.StartupOptions.Phase2RecoveryMode, "cleared when the boot timed out")
}

// A retry of the host's post-update after the power cycle happened (its
// reply or its ledger record lost) must not power-cycle the booting host
// again: the SP's own state tells the cycle is done.
func TestHostPostUpdateRetryDoesNotCycleAgain(t *testing.T) {
	m := newMGSAct(t)
	_, p2Ref, id := m.flashHostPhase1(t)

	in := mgsupdate.HostPostUpdateInput{SP: sled2, AttemptID: id, NewSlot: 1, Phase2: p2Ref}
	_, err := m.env.ExecuteActivity(m.a.HostPostUpdate, in)
	require.NoError(t, err)
	// The same activity again: a retry after a lost reply (no ledger here).
	_, err = m.env.ExecuteActivity(m.a.HostPostUpdate, in)
	require.NoError(t, err)
	assert.Equal(t, 1, m.truth().Host.Boots, "the host was power-cycled once")

	res, err := exec[mgsupdate.HostWaitBootResult](m, m.a.HostWaitBoot, mgsupdate.HostWaitBootInput{
		SP: sled2, NewSlot: 1, Phase2ID: phase2ID(t, p2Ref.Path), Timeout: 10 * time.Second, PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	assert.True(t, res.Booted)
}

// The recovery boot (Transient: the slot active for one boot): the
// persistent slot is not written, and a retry after the host's boot has
// consumed the one-boot choice (the SP's active slot reads the persistent
// one again) still does not power-cycle the host again: recovery mode on a
// powered host is the marker. The boot is told by the fetch's end.
func TestHostPostUpdateTransientRetryDoesNotCycleAgain(t *testing.T) {
	m := newMGSAct(t)
	_, p2Ref, id := m.flashHostPhase1(t)
	persistent := m.truth().Host.PersistentSlot
	require.NotEqual(t, 1, persistent)

	in := mgsupdate.HostPostUpdateInput{SP: sled2, AttemptID: id, NewSlot: 1, Phase2: p2Ref, Transient: true}
	_, err := m.env.ExecuteActivity(m.a.HostPostUpdate, in)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return m.truth().Host.TransientSlot == nil }, 10*time.Second, 5*time.Millisecond, "the boot consumed the one-boot choice")
	_, err = m.env.ExecuteActivity(m.a.HostPostUpdate, in)
	require.NoError(t, err)
	assert.Equal(t, 1, m.truth().Host.Boots, "the host was power-cycled once")
	assert.Equal(t, persistent, m.truth().Host.PersistentSlot, "the persistent slot is not written")

	res, err := exec[mgsupdate.HostWaitBootResult](m, m.a.HostWaitBoot, mgsupdate.HostWaitBootInput{
		SP: sled2, NewSlot: 1, Phase2ID: phase2ID(t, p2Ref.Path), Transient: true, Timeout: 10 * time.Second, PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	assert.True(t, res.Booted)
	tr := m.truth().Host
	assert.Equal(t, 1, tr.BootedSlot)
	assert.False(t, tr.StartupOptions.Phase2RecoveryMode)
	assert.Equal(t, persistent, tr.ActiveSlot, "the next boot is the installed slot's again")
}
