package mgsupdate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// The other driver wrote our phase 1 and made its slot
// active (host_phase1_updater.rs post_update_impl: sp_component_active_slot_set
// first, then the SP reset), then died before the reset. The update status
// stays complete (only a reset clears it), so the takeover comes due.
// omicron (driver_update.rs apply_update): wait_for_update_done waits out
// MismatchedHostOsActiveSlot until the progress timeout, then try_reset:
// post_update (slot set again, one SP reset) and TookOverConcurrentUpdate.
// fleetsaga takes it over the same way: the active slot is the one we
// wrote and holds our phase 1, the host does not run on it, so one reset
// (once, takeOver declined and the update failed HostBootDiskMismatch).
func TestHostFlashTakesOverAForeignDriverThatDiedBetweenActivateAndReset(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"), hostSlots(0, "2.0.0", tSHA, "ab"))
	m.script("MGSStartUpdate", busyWith(mgs.UpdateComplete), started)
	m.script("MGSWaitUpdate", waitDone(WaitTakeover), waitDone(WaitComplete))
	m.script("HostBootedOn", func(context.Context, HostBootInput) (bool, error) { return false, nil })
	res, err := m.runHost(hostInput())
	require.NoError(t, err, "omicron takes this update over")
	assert.Equal(t, MGSOutcomeTookOver, res.Outcome)
	require.Len(t, m.hostBoots, 1, "one reset: the takeover's")
	assert.Equal(t, uint16(0), m.hostBoots[0].Slot)
}

// A takeover whose boot times out leaves the host on the slot the other
// driver activated: the "put the host back" undo is our own update's only
// (it once ran here too: a second restart, the other update reverted), as
// omicron (driver_update.rs apply_update) never reverts: its post-update
// wait's timeout is ResetTimeoutError.
func TestHostFlashTakeoverBootTimeoutDoesNotRevertTheOtherUpdate(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"), hostSlots(1, "1.0.0", "ab", tSHA))
	m.script("MGSStartUpdate", busyWith(mgs.UpdateComplete), started)
	m.script("MGSWaitUpdate", waitDone(WaitTakeover), waitDone(WaitComplete))
	m.script("HostBootSlot", func(context.Context, HostBootInput) (HostBootResult, error) {
		return HostBootResult{}, temporal.NewNonRetryableApplicationError("the host did not come back", failure.HostBootTimeout, nil)
	}, func(context.Context, HostBootInput) (HostBootResult, error) { return HostBootResult{Reset: true}, nil })
	_, err := m.runHost(hostInput())
	require.Error(t, err)
	for _, b := range m.hostBoots {
		assert.NotEqual(t, "restore", b.Why, "the taken-over update is not reverted (slot %d)", b.Slot)
	}
}
