package mgsupdate

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func hostInput() HostFlashInput {
	return HostFlashInput{
		Sled:   SPTarget{Type: mgs.SpTypeSled, Slot: 2, Serial: tSerial},
		Phase1: Artifact{Version: "2.0.0", SHA256: tSHA, Path: "/tmp/phase1.bin"},
		Phase2: Artifact{Version: "2.0.0", SHA256: tSHA2, Path: "/tmp/phase2.bin"},
		Timing: MGSTiming{AttemptDelay: time.Second, MaxAttempts: 3},
	}
}

// hostAt: active slot `active` holds phase 1 version v with hash sha.
func hostAt(active uint16, v, sha string) func(context.Context, PrecheckInput) (PrecheckResult, error) {
	return func(_ context.Context, in PrecheckInput) (PrecheckResult, error) {
		return PrecheckResult{Serial: tSerial, Model: "913-0000019",
			Active:   SlotInfo{Slot: active, Valid: true, Version: v, SHA256: sha},
			Inactive: SlotInfo{Slot: 1 - active, Valid: true, Version: "0.9.0"}}, nil
	}
}

func (m *mgsTest) runHost(in HostFlashInput) (MGSUpdateResult, error) {
	m.env.ExecuteWorkflow(HostBootFlashUpdate, in)
	require.True(m.t, m.env.IsWorkflowCompleted())
	var res MGSUpdateResult
	err := m.env.GetWorkflowError()
	if err == nil {
		require.NoError(m.t, m.env.GetWorkflowResult(&res))
	}
	return res, err
}

func TestHostFlashHappyPath(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"))
	var during MGSProgress
	m.script("HostWaitBoot", func(_ context.Context, in HostWaitBootInput) (HostWaitBootResult, error) {
		return HostWaitBootResult{Offset: 40, Total: 100, Since: time.Unix(5, 0)}, nil
	}, func(_ context.Context, in HostWaitBootInput) (HostWaitBootResult, error) {
		v, err := m.env.QueryWorkflow(workflows.ProgressQuery)
		require.NoError(t, err)
		require.NoError(t, v.Get(&during))
		assert.Equal(t, time.Unix(5, 0).UTC(), in.Since.UTC(), "the boot bound carries across checkpoints")
		return HostWaitBootResult{Booted: true, Offset: 100, Total: 100}, nil
	})
	res, err := m.runHost(hostInput())
	require.NoError(t, err)
	assert.Equal(t, MGSOutcomeCompletedUpdate, res.Outcome)
	require.Len(t, m.starts, 1)
	assert.Equal(t, mgs.ComponentHostBootFlash, m.starts[0].Component)
	assert.Equal(t, uint16(0), m.starts[0].FirmwareSlot, "phase 1 goes to the inactive slot")
	require.Len(t, m.hostPost, 1)
	assert.Equal(t, uint16(0), m.hostPost[0].NewSlot)
	assert.Equal(t, tSHA2, m.hostPost[0].Phase2.SHA256)
	assert.Equal(t, m.starts[0].UpdateID, m.hostPost[0].AttemptID)
	assert.Empty(t, m.posts, "no SP reset for a host flash")
	assert.Equal(t, MGSPhaseHostBoot, during.Phase)
	assert.EqualValues(t, 40, during.Done, "phase 2 progress from the SP's record")
	assert.EqualValues(t, 100, during.Total)
	assert.Equal(t, "sp/sled/2", m.records[0].Next.Target)
}

func TestHostFlashNoChangeNeeded(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(0, "2.0.0", tSHA))
	res, err := m.runHost(hostInput())
	require.NoError(t, err)
	assert.Equal(t, MGSOutcomeNoChangeNeeded, res.Outcome)
	assert.Empty(t, m.starts)
}

func TestHostFlashNeverRollsBack(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(0, "3.0.0", "cd"))
	_, err := m.runHost(hostInput())
	assert.Equal(t, failure.WouldDowngrade, appErrType(err))
}

func TestHostFlashBootTimeout(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(0, "1.0.0", "ab"))
	m.script("HostWaitBoot", func(context.Context, HostWaitBootInput) (HostWaitBootResult, error) {
		return HostWaitBootResult{}, temporal.NewNonRetryableApplicationError("host did not boot", failure.HostBootTimeout, nil)
	})
	_, err := m.runHost(hostInput())
	require.Error(t, err)
	assert.Equal(t, failure.HostBootTimeout, appErrType(err))
	assert.Equal(t, ledger.StateFailed, m.lastFinish().State)
}

func TestHostFlashWaitsOutConcurrentUpdate(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(0, "1.0.0", "ab"))
	m.script("MGSStartUpdate", busyWith(mgs.UpdateInProgress), started)
	m.script("MGSWaitUpdate", waitDone(WaitFree), waitDone(WaitComplete))
	res, err := m.runHost(hostInput())
	require.NoError(t, err)
	assert.Equal(t, MGSOutcomeCompletedUpdate, res.Outcome)
	assert.Len(t, m.starts, 2)
	assert.False(t, m.waits[0].Ours)
}

func TestHostFlashNewAttemptAfterLost(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(0, "1.0.0", "ab"))
	m.script("MGSWaitUpdate", waitDone(WaitLost), waitDone(WaitComplete))
	res, err := m.runHost(hostInput())
	require.NoError(t, err)
	assert.Len(t, res.AttemptIDs, 2)
}

func TestHostFlashInputContract(t *testing.T) {
	in := hostInput()
	require.NoError(t, in.Validate())
	in.Sled.Type = mgs.SpTypeSwitch
	assert.ErrorContains(t, in.Validate(), "only sled SPs have a host")
	in = hostInput()
	in.Phase2.Path = ""
	assert.ErrorContains(t, in.Validate(), "phase2")
}

// A host flash has nothing to take over (MGS accepts a new host flash
// update after a complete one, and MGSWaitUpdate reports it free): a wait
// that reported a takeover anyway ends the update without touching the
// device; it must not reset the SP, as the SP firmware's takeover does.
func TestHostFlashNeverResetsTheSPToTakeOver(t *testing.T) {
	m := newMGSTest(t)
	// Slot 1 holds 0.9.0, newer than the active 0.5.0: a takeover would
	// not be refused as a rollback.
	m.script("MGSPrecheck", hostAt(0, "0.5.0", "ab"))
	m.script("MGSStartUpdate", busyWith(mgs.UpdateComplete), started)
	m.script("MGSWaitUpdate", waitDone(WaitTakeover), waitDone(WaitComplete))
	_, err := m.runHost(hostInput())
	assert.Empty(t, m.posts, "the SP is not reset")
	assert.Empty(t, m.hostPost, "the host is not power-cycled")
	require.Error(t, err)
	assert.Equal(t, failure.UnexpectedWaitOutcome, appErrType(err))
	assert.Equal(t, ledger.StateFailed, m.lastFinish().State)
}
