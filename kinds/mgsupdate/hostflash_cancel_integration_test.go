package mgsupdate_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// A cancel after the SP reset, with the new slot's boot failed (its phase
// 1 names a phase 2 nobody wrote: the host sits in phase2_missing): the
// cancel is not ignored. The host is put back on its old slot and boots
// its old OS; the update ends cancelled.
func TestHostFlashCancelAfterFailedBootPutsTheHostBack(t *testing.T) {
	const cubby = 2
	st := newMGSStack(t)
	in := st.hostInputNaming(cubby, simmgs.SHA256Hex([]byte("a phase 2 nobody wrote")))
	in.Timing.NewVersionTimeout = time.Minute // the cancel, not the timeout, ends it
	oldOS := st.truth(cubby).Host.Slots[0]
	run := st.startWF(workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)
	require.Eventually(t, func() bool { return st.truth(cubby).Host.State == simmgs.HostPhase2Missing }, 60*time.Second, 10*time.Millisecond)
	require.NoError(t, st.env.Client.CancelWorkflow(context.Background(), run.GetID(), run.GetRunID()))

	_, err := st.result(run)
	var ce *temporal.CanceledError
	require.ErrorAs(t, err, &ce, "%v", err)
	st.requirePutBack(run, cubby, oldOS, ledger.StateCancelled)
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/host-flash-cancel-after-failed-boot.json")
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

func (st *mgsStack) progress(ctx context.Context, run client.WorkflowRun) (mgsupdate.MGSProgress, bool) {
	v, err := st.env.Client.QueryWorkflow(ctx, run.GetID(), run.GetRunID(), workflows.ProgressQuery)
	if err != nil {
		return mgsupdate.MGSProgress{}, false
	}
	var p mgsupdate.MGSProgress
	return p, v.Get(&p) == nil
}
