package mgsupdate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// Issue 14 (chaos seed 2): the cancel reaches a host flash while the host
// boots the new slot. The power cycle is done and cannot be undone, so the
// boot is still followed to its end and the update ends completed, saying
// that the cancel was ignored.
func TestHostFlashCancelledWhileBootingEndsCompleted(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"))
	m.script("HostWaitBoot", func(context.Context, HostWaitBootInput) (HostWaitBootResult, error) {
		m.env.CancelWorkflow()
		return HostWaitBootResult{Booted: true, Offset: 100, Total: 100}, nil
	})
	res, err := m.runHost(hostInput())
	require.NoError(t, err, "the host boots the new image: the update is not cancelled")
	assert.Equal(t, MGSOutcomeCompletedUpdate, res.Outcome)
	assert.True(t, res.CancelIgnored)
	assert.Equal(t, ledger.StateCompleted, m.lastFinish().State)
	assert.Equal(t, MGSOutcomeCompletedUpdate, m.lastFinish().Outcome)
	assert.Empty(t, m.aborts, "nothing to abort after the power cycle")
	assert.Zero(t, m.count("HostCycledOntoSlot"), "the power cycle had returned: no need to ask")
}

// The cancel arrives while HostPostUpdate runs, and the SP shows the host
// on with the new slot active: it went through the power cycle, so the
// boot is followed and the update ends completed.
func TestHostFlashCancelledDuringPowerCycleThatHappenedEndsCompleted(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"))
	m.script("HostPostUpdate", cancelHostPostUpdate(m))
	res, err := m.runHost(hostInput())
	require.NoError(t, err)
	assert.True(t, res.CancelIgnored)
	assert.Equal(t, 1, m.count("HostCycledOntoSlot"), "the SP was asked how far the power cycle got")
	assert.Equal(t, 1, m.count("HostWaitBoot"), "the boot was followed")
	assert.Equal(t, ledger.StateCompleted, m.lastFinish().State)
}

// The cancel stops HostPostUpdate before it power-cycled the host (the SP
// says so): today's behaviour, the update ends cancelled and the boot is
// not followed.
func TestHostFlashCancelledBeforePowerCycleEndsCancelled(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"))
	m.script("HostPostUpdate", cancelHostPostUpdate(m))
	m.script("HostCycledOntoSlot", func(context.Context, HostPostUpdateInput) (bool, error) { return false, nil })
	_, err := m.runHost(hostInput())
	var ce *temporal.CanceledError
	require.ErrorAs(t, err, &ce)
	assert.Zero(t, m.count("HostWaitBoot"))
	assert.Equal(t, ledger.StateCancelled, m.lastFinish().State)
}

// A cancel while phase 1 is written aborts our update and ends cancelled;
// the host is never power-cycled.
func TestHostFlashCancelledWhileWritingAbortsAndEndsCancelled(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"))
	m.script("MGSWaitUpdate", func(context.Context, WaitUpdateInput) (WaitUpdateResult, error) {
		m.env.CancelWorkflow()
		return WaitUpdateResult{}, temporal.NewCanceledError("stopped by the cancel")
	})
	_, err := m.runHost(hostInput())
	var ce *temporal.CanceledError
	require.ErrorAs(t, err, &ce)
	require.Len(t, m.starts, 1)
	require.Len(t, m.aborts, 1, "our update is aborted")
	assert.Equal(t, m.starts[0].UpdateID, m.aborts[0].UpdateID)
	assert.Empty(t, m.hostPost, "the host is not power-cycled")
	assert.Equal(t, ledger.StateCancelled, m.lastFinish().State)
}

// cancelHostPostUpdate cancels the workflow while HostPostUpdate runs; the
// activity stops on the cancel.
func cancelHostPostUpdate(m *mgsTest) func(context.Context, HostPostUpdateInput) error {
	return func(context.Context, HostPostUpdateInput) error {
		m.env.CancelWorkflow()
		return temporal.NewCanceledError("stopped by the cancel")
	}
}
