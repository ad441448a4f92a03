package mgsupdate_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Issue 14 (chaos seed 2): the operator cancels a host flash while the
// host boots the new slot (phase host-boot, after the power cycle). The
// power cycle is not undone: fleetsim's host boots the new image, and the
// ledger agrees (completed, not cancelled); the result says the cancel was
// ignored. Recorded: the cancel path's history.
func TestHostFlashCancelledWhileBootingEndsCompletedOnFleetsim(t *testing.T) {
	const cubby = 2
	st := newMGSStack(t, func(s *spec.Spec) {
		s.Timings.Phase2BytesPerSecond = 1 << 9 // ×100: 128 KiB in ~2.6 s, long enough to cancel in
	})
	in := st.hostInput(cubby)
	run := st.startWF(workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)

	st.cancelInPhase(run, mgsupdate.MGSPhaseHostBoot) // the host was power-cycled and boots

	res, err := st.result(run)
	require.NoError(t, err, "a host flash past its power cycle ends completed")
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	assert.True(t, res.CancelIgnored)

	tr := st.truth(cubby)
	assert.Equal(t, simmgs.HostRunning, tr.Host.State)
	assert.Equal(t, 1, tr.Host.BootedSlot, "the host runs the new slot")
	assert.Equal(t, "2.0.0", tr.Host.Slots[tr.Host.BootedSlot].Version)
	assert.Equal(t, in.Phase2.SHA256, tr.Host.BootedPhase2)
	assert.False(t, tr.Host.StartupOptions.Phase2RecoveryMode, "recovery mode cleared after the boot")
	st.checkLedgerAgrees(run, cubby, res)
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/host-flash-cancel-after-power-cycle.json")
}

// cancelInPhase cancels run as soon as its progress query shows phase p;
// the test fails if the update ends first.
func (st *mgsStack) cancelInPhase(run client.WorkflowRun, p workflows.Phase) {
	st.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		if pr, ok := st.progress(ctx, run); ok && pr.Phase == p {
			break
		}
		desc, err := st.env.Client.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
		require.NoError(st.t, err)
		if s := desc.WorkflowExecutionInfo.Status; s != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			res, err := st.result(run)
			st.t.Fatalf("the update ended (%s) before phase %s: %+v, %v", s, p, res, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(st.t, st.env.Client.CancelWorkflow(ctx, run.GetID(), run.GetRunID()))
}
