package mgsupdate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// What another client's update leaves decides ours, as in omicron's
// nexus/mgs-updates/src/driver_update.rs (wait_for_update_done): the
// preconditions of the request still hold after it, or the update fails.
// The fleetsim versions are in driverupdate_integration_test.go.

// hostSlots: the active slot holds phase 1 activeSHA (version v), the
// other inactiveSHA.
func hostSlots(active uint16, v, activeSHA, inactiveSHA string) func(context.Context, PrecheckInput) (PrecheckResult, error) {
	return func(ctx context.Context, in PrecheckInput) (PrecheckResult, error) {
		r, err := hostAt(active, v, activeSHA)(ctx, in)
		r.Inactive.SHA256 = inactiveSHA
		return r, err
	}
}

// An SP update that expects an active version fails WrongActiveVersion
// when a concurrent update left a third version (omicron
// common_sp_update.rs: PrecheckError::WrongActiveVersion), and starts
// nothing of its own.
func TestSPFirmwareExpectedActiveHoldsAfterConcurrentUpdate(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSStartUpdate", busyWith(mgs.UpdateInProgress), started)
	m.script("MGSWaitUpdate", waitDone(WaitForeignDone), waitDone(WaitComplete))
	m.script("MGSPrecheck", precheckAt("1.0.0", "0.9.0"), precheckAt("1.0.5", "1.0.0"))
	in := spInput()
	in.ExpectedActive = "1.0.0"
	_, err := m.runSP(in)
	require.Error(t, err)
	assert.Equal(t, failure.WrongActiveVersion, appErrType(err))
	assert.Len(t, m.starts, 1, "only the refused start")
	assert.Empty(t, m.posts)
}

// A concurrent host update that moved the active slot leaves our phase 2
// on the disk of the slot now active: writing phase 1 to the other slot
// would pair it with a disk that never got phase 2. The update fails
// WrongActiveSlot (omicron host_phase1_updater.rs:
// WrongActiveHostPhase1Slot) and writes nothing.
func TestHostFlashFailsWhenAConcurrentUpdateMovedTheActiveSlot(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"), hostAt(0, "1.5.0", "cd"))
	m.script("MGSStartUpdate", busyWith(mgs.UpdateInProgress), started)
	m.script("MGSWaitUpdate", waitDone(WaitForeignDone), waitDone(WaitComplete))
	_, err := m.runHost(hostInput())
	require.Error(t, err)
	assert.Equal(t, failure.WrongActiveSlot, appErrType(err))
	require.Len(t, m.phase2s, 1)
	assert.Equal(t, uint16(0), m.phase2s[0].Slot)
	assert.Len(t, m.starts, 1, "only the refused start")
	assert.Empty(t, m.hostBoots)
}

// Someone else's complete host flash update of our phase 1, not activated
// within the takeover timeout, is taken over: its slot made active and
// the SP reset once (the boot), not overwritten with ours.
func TestHostFlashTakesOverConcurrentUpdate(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"), hostSlots(1, "1.0.0", "ab", tSHA), hostSlots(0, "2.0.0", tSHA, "ab"))
	m.script("MGSStartUpdate", busyWith(mgs.UpdateComplete), started)
	m.script("MGSWaitUpdate", waitDone(WaitTakeover), waitDone(WaitComplete))
	res, err := m.runHost(hostInput())
	require.NoError(t, err)
	assert.Equal(t, MGSOutcomeTookOver, res.Outcome)
	assert.Equal(t, foreignID.String(), res.UpdateID)
	assert.Len(t, m.starts, 1, "ours is never sent")
	require.Len(t, m.hostBoots, 1, "one boot: the takeover's")
	assert.Equal(t, uint16(0), m.hostBoots[0].Slot)
	assert.Equal(t, "activate", m.hostBoots[0].Why)
	assert.Empty(t, m.posts, "no SP firmware post-update")
}

// A complete host flash update that is not our phase 1 is not activated:
// after the takeover timeout ours is written over it.
func TestHostFlashDoesNotTakeOverAnotherImage(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"), hostSlots(1, "1.0.0", "ab", "ee"))
	m.script("MGSStartUpdate", busyWith(mgs.UpdateComplete), started)
	m.script("MGSWaitUpdate", waitDone(WaitTakeover), waitDone(WaitComplete))
	res, err := m.runHost(hostInput())
	require.NoError(t, err)
	assert.Equal(t, MGSOutcomeCompletedUpdate, res.Outcome)
	assert.Len(t, m.starts, 2)
	require.Len(t, m.hostBoots, 1, "one boot: ours")
}
