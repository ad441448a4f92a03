package activities_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// A workflow terminated mid-update never finishes its ledger attempt; the
// next update of the target must not be blocked forever by it, while an
// attempt whose workflow still runs keeps the target.
func TestRecordIntentReleasesOnlyAbandonedAttempts(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	la := &activities.LedgerActivities{Store: env.Store, Temporal: env.Client, Identity: "test"}

	// A workflow nobody executes: it stays running until terminated.
	owner, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: env.TaskQueue + "-idle"}, "SPFirmwareUpdate")
	require.NoError(t, err)
	first := ledger.Attempt{ID: uuid.New(), UpdateID: owner.GetID(), Attempt: 1, Kind: "sp-firmware", Target: "sp/sled/7",
		WorkflowID: owner.GetID(), RunID: owner.GetRunID()}
	require.NoError(t, la.RecordIntent(ctx, first))

	second := ledger.Attempt{ID: uuid.New(), UpdateID: "other", Attempt: 1, Kind: "host-flash", Target: "sp/sled/7",
		WorkflowID: "other", RunID: "r2"}
	err = la.RecordIntent(ctx, second)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, failure.TargetBusy, appErr.Type(), "the owner still runs: the target stays busy")

	require.NoError(t, env.Client.TerminateWorkflow(ctx, owner.GetID(), owner.GetRunID(), "operator gave up"))
	require.NoError(t, la.RecordIntent(ctx, second), "the terminated owner's attempt is released")

	got, err := env.Store.Get(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, ledger.StateFailed, got.State)
	require.Equal(t, "abandoned", got.Outcome)
	require.Contains(t, got.Error, "Terminated")
	events, err := env.Store.Events(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, "abandoned", events[len(events)-1].Step)
}

// casOnce continues as new once, then waits for a signal: its first run
// closes (ContinuedAsNew) while its workflow ID runs on.
func casOnce(ctx workflow.Context, n int) error {
	if n == 0 {
		return workflow.NewContinueAsNewError(ctx, casOnce, 1)
	}
	workflow.GetSignalChannel(ctx, "stop").Receive(ctx, nil)
	return nil
}

// An attempt recorded by a run that continued as new still belongs to the
// running chain: it is not released. Once that chain ends, a fresh start
// under the same workflow ID (a new chain) does not hold it either.
func TestRecordIntentKeepsAttemptOfAContinuedAsNewWorkflow(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	w := worker.New(env.Client, env.TaskQueue, worker.Options{})
	w.RegisterWorkflow(casOnce)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	la := &activities.LedgerActivities{Store: env.Store, Temporal: env.Client, Identity: "test"}

	id := "cas-owner-" + uuid.NewString()[:8]
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, casOnce, 0)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, err := env.Client.DescribeWorkflowExecution(ctx, id, "")
		return err == nil && d.GetWorkflowExecutionInfo().GetExecution().GetRunId() != run.GetRunID() &&
			d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, 30*time.Second, 50*time.Millisecond, "the workflow continued as new")

	first := ledger.Attempt{ID: uuid.New(), UpdateID: id, Attempt: 1, Kind: "sp-firmware", Target: "sp/sled/8",
		WorkflowID: id, RunID: run.GetRunID()}
	require.NoError(t, env.Store.RecordIntent(ctx, first))
	second := ledger.Attempt{ID: uuid.New(), UpdateID: "other", Attempt: 1, Kind: "host-flash", Target: "sp/sled/8",
		WorkflowID: "other", RunID: "r2"}
	err = la.RecordIntent(ctx, second)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr, "the continued run still owns the attempt")
	require.Equal(t, failure.TargetBusy, appErr.Type())
	got, err := env.Store.Get(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, ledger.StatePending, got.State, "the running owner's attempt is kept")

	// The chain ends; the same workflow ID starts afresh (nobody runs it).
	require.NoError(t, env.Client.TerminateWorkflow(ctx, id, "", "operator gave up"))
	_, err = env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue + "-idle"}, "SPFirmwareUpdate")
	require.NoError(t, err)
	require.NoError(t, la.RecordIntent(ctx, second), "a fresh start of the workflow ID does not own the old chain's attempt")
	got, err = env.Store.Get(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, ledger.StateFailed, got.State)
	require.Equal(t, "abandoned", got.Outcome)
}
