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
// tPhase2ID is the phase 2 image's ID at MGS (its header's SHA-256), which
// the precheck reads from the artifact.
const tPhase2ID = "d2595c48371de62d9d97452f5a2e784ad2f847e349c4e5a139335e6da5b7cc63"

func hostAt(active uint16, v, sha string) func(context.Context, PrecheckInput) (PrecheckResult, error) {
	return func(_ context.Context, in PrecheckInput) (PrecheckResult, error) {
		return PrecheckResult{Serial: tSerial, Model: "913-0000019",
			Active:   SlotInfo{Slot: active, Valid: true, Version: v, SHA256: sha},
			Inactive: SlotInfo{Slot: 1 - active, Valid: true, Version: "0.9.0"}, Phase2ID: tPhase2ID}, nil
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

// The rack's path, in order: phase 2 to the inactive slot's disk (after
// the attempt's intent), phase 1 to that slot, then the boot on it; no SP
// post-update reset of the SP firmware kind.
func TestHostFlashHappyPath(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"))
	res, err := m.runHost(hostInput())
	require.NoError(t, err)
	assert.Equal(t, MGSOutcomeCompletedUpdate, res.Outcome)
	require.Len(t, m.phase2s, 1)
	assert.Equal(t, uint16(0), m.phase2s[0].Slot, "phase 2 goes to the disk of the inactive slot")
	assert.Equal(t, uint16(1), m.phase2s[0].ActiveSlot)
	assert.Equal(t, tSHA2, m.phase2s[0].Phase2.SHA256, "sled-agent names phase 2 by the file's SHA-256")
	assert.Equal(t, tSerial, m.phase2s[0].Serial)
	require.Len(t, m.starts, 1)
	assert.Equal(t, mgs.ComponentHostBootFlash, m.starts[0].Component)
	assert.Equal(t, uint16(0), m.starts[0].FirmwareSlot, "phase 1 goes to the inactive slot")
	assert.Equal(t, m.starts[0].UpdateID, m.phase2s[0].AttemptID, "phase 2 is written under the attempt's intent")
	require.Len(t, m.hostBoots, 1)
	assert.Equal(t, uint16(0), m.hostBoots[0].Slot)
	assert.Equal(t, m.starts[0].UpdateID, m.hostBoots[0].AttemptID)
	assert.Empty(t, m.posts, "no SP firmware post-update")
	assert.Equal(t, "sp/sled/2", m.records[0].Next.Target)
}

// A phase 2 that sled-agent did not write in time ends the update before
// phase 1 is touched.
func TestHostFlashPhase2NotWrittenTouchesNoPhase1(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"))
	m.script("HostPhase2ToDisk", func(context.Context, HostPhase2Input) error {
		return temporal.NewNonRetryableApplicationError("not written", failure.Phase2WriteTimeout, nil)
	})
	_, err := m.runHost(hostInput())
	assert.Equal(t, failure.Phase2WriteTimeout, appErrType(err))
	assert.Empty(t, m.starts, "phase 1 is never written without its pair on disk")
	assert.Empty(t, m.hostBoots)
	assert.Equal(t, ledger.StateFailed, m.lastFinish().State)
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

// A host that does not come back on the new slot is put back on the old
// one, and the update fails saying so.
func TestHostFlashBootTimeoutPutsTheHostBack(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", hostAt(0, "1.0.0", "ab"))
	m.script("HostBootSlot", func(context.Context, HostBootInput) (HostBootResult, error) {
		return HostBootResult{}, temporal.NewNonRetryableApplicationError("host did not boot", failure.HostBootTimeout, nil)
	}, func(context.Context, HostBootInput) (HostBootResult, error) { return HostBootResult{Reset: true}, nil })
	_, err := m.runHost(hostInput())
	require.Error(t, err)
	assert.Equal(t, failure.HostBootTimeout, appErrType(err))
	require.Len(t, m.hostBoots, 2)
	assert.Equal(t, uint16(1), m.hostBoots[0].Slot)
	assert.Equal(t, uint16(0), m.hostBoots[1].Slot, "put back on the old slot")
	f := m.lastFinish()
	assert.Equal(t, ledger.StateFailed, f.State)
	assert.Contains(t, f.Error, "host put back on phase 1 slot 0, its old OS")
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
	// A release carries one phase 1 and the phase 2 it boots, under one
	// version: two versions are not a pair.
	in = hostInput()
	in.Phase2.Version = "2.0.1"
	assert.ErrorContains(t, in.Validate(), "phase 1 version 2.0.0 and phase 2 version 2.0.1 are not one release's pair")
}
