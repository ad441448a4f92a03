package mgsupdate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// The cancel arrives while the host boots the new slot, and sled-agent
// already reports the new boot disk: the host runs the new OS, which is
// not rolled back; the update ends completed, saying the cancel was
// ignored.
func TestHostFlashCancelAfterTheNewBootEndsCompleted(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"))
	m.script("HostBootSlot", cancelHostBoot(m))
	res, err := m.runHost(hostInput())
	require.NoError(t, err, "the host runs the new image: the update is not cancelled")
	assert.Equal(t, MGSOutcomeCompletedUpdate, res.Outcome)
	assert.True(t, res.CancelIgnored)
	assert.Equal(t, 1, m.count("HostBootedOn"), "sled-agent was asked")
	require.Len(t, m.hostBoots, 1, "the host is not put back")
	assert.Equal(t, ledger.StateCompleted, m.lastFinish().State)
}

// The cancel arrives while the host boots the new slot and the boot has
// failed (sled-agent does not report the new disk): the cancel is not
// ignored: the host is put back on its old slot and the update ends
// cancelled.
func TestHostFlashCancelWithAFailedBootPutsTheHostBack(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"))
	m.script("HostBootSlot", cancelHostBoot(m), func(context.Context, HostBootInput) (HostBootResult, error) {
		return HostBootResult{Reset: true}, nil
	})
	m.script("HostBootedOn", func(context.Context, HostBootInput) (bool, error) { return false, nil })
	_, err := m.runHost(hostInput())
	var ce *temporal.CanceledError
	require.ErrorAs(t, err, &ce)
	require.Len(t, m.hostBoots, 2)
	assert.Equal(t, uint16(0), m.hostBoots[0].Slot)
	assert.Equal(t, uint16(1), m.hostBoots[1].Slot, "put back on the old slot")
	f := m.lastFinish()
	assert.Equal(t, ledger.StateCancelled, f.State)
	assert.Contains(t, f.Error, "host put back on phase 1 slot 1, its old OS")
}

// A cancel while phase 1 is written aborts our update and ends cancelled;
// the host is never rebooted.
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
	assert.Empty(t, m.hostBoots, "the host is not rebooted")
	assert.Equal(t, ledger.StateCancelled, m.lastFinish().State)
}

// cancelHostBoot cancels the workflow while HostBootSlot runs; the
// activity stops on the cancel.
func cancelHostBoot(m *mgsTest) func(context.Context, HostBootInput) (HostBootResult, error) {
	return func(context.Context, HostBootInput) (HostBootResult, error) {
		m.env.CancelWorkflow()
		return HostBootResult{}, temporal.NewCanceledError("stopped by the cancel")
	}
}
