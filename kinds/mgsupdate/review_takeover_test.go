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

// Review (rvdriver): the other driver wrote our phase 1 and made its slot
// active (host_phase1_updater.rs post_update_impl: sp_component_active_slot_set
// first, then the SP reset), then died before the reset. The update status
// stays complete (only a reset clears it), so the takeover comes due.
// omicron (driver_update.rs apply_update): wait_for_update_done waits out
// MismatchedHostOsActiveSlot until the progress timeout, then try_reset:
// post_update (slot set again, one SP reset) and TookOverConcurrentUpdate.
// fleetsaga's takeOver declines (the active slot is no longer w.active), the
// precheck after it waits for a boot nobody will cause, and the update fails
// HostBootDiskMismatch with the host never rebooted onto the new OS.
func TestReviewHostFlashTakesOverAForeignDriverThatDiedBetweenActivateAndReset(t *testing.T) {
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

// Review (rvdriver): a takeover whose boot times out puts the host back on
// the old slot: fleetsaga's own-update undo, registered by postUpdate, also
// runs for someone else's update it took over (a second host restart, and
// the other driver's activated update reverted). omicron (driver_update.rs
// apply_update) never reverts: the post-update wait's timeout is
// ResetTimeoutError, the host left on the slot the request activated.
func TestReviewHostFlashTakeoverBootTimeoutDoesNotRevertTheOtherUpdate(t *testing.T) {
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
