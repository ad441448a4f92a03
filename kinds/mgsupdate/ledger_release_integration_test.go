package mgsupdate_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// An SP firmware update terminated mid-delivery never finishes its ledger
// attempt. Starting the same update again (same workflow ID, as the
// starter does) must not be refused as TargetBusy: the worker releases the
// abandoned attempt and the update completes.
func TestSPFirmwareAfterTerminatedUpdateIsNotBlocked(t *testing.T) {
	st := newMGSStack(t)
	ctx := context.Background()
	// The first delivery stops making progress: the update stays in flight.
	st.arm(faults.Fault{Kind: faults.SPStuck, Target: "sp/sled/2", AfterPercent: 30, Times: 1})
	in := st.spInput(2, "1.1.0")
	in.Timing.ProgressTimeout = time.Minute
	// One workflow ID for both starts; unique per test (shared namespace).
	id := workflows.WorkflowID(workflows.KindSPFirmware, in.Target()) + "#" + uuid.NewString()[:8]
	start := func(in mgsupdate.SPFirmwareInput) client.WorkflowRun {
		run, err := st.env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: id, TaskQueue: st.env.TaskQueue,
			TypedSearchAttributes: workflows.StartAttributes(workflows.KindSPFirmware, in.Target(), in.ArtifactVersion()),
		}, mgsupdate.SPFirmwareUpdate, in)
		require.NoError(t, err)
		return run
	}
	first := start(in)
	require.Eventually(t, func() bool {
		ds := st.truth(2).Deliveries
		return len(ds) == 1 && ds[0].Bytes > 0
	}, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, st.env.Client.TerminateWorkflow(ctx, id, first.GetRunID(), "operator gave up"))
	active, err := st.env.Store.ActiveForTarget(ctx, in.Target())
	require.NoError(t, err)
	require.NotNil(t, active, "the terminated update left its attempt active")

	second := start(st.spInput(2, "1.1.0"))
	res, err := st.result(second)
	require.NoError(t, err, "the fresh start is not refused")
	assert.Contains(t, []string{mgsupdate.MGSOutcomeCompletedUpdate, mgsupdate.MGSOutcomeTookOver}, res.Outcome)
	assert.Equal(t, "1.1.0", st.truth(2).SP.Active.Version)

	old, err := st.env.Store.Get(ctx, active.ID)
	require.NoError(t, err)
	assert.Equal(t, ledger.StateFailed, old.State)
	assert.Equal(t, "abandoned", old.Outcome)
	atts, err := st.env.Store.Attempts(ctx, id)
	require.NoError(t, err)
	last := atts[len(atts)-1]
	assert.Equal(t, ledger.StateCompleted, last.State)
	assert.Equal(t, second.GetRunID(), last.RunID)
}
