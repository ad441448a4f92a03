package activities_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
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
	require.Equal(t, activities.ErrTypeTargetBusy, appErr.Type(), "the owner still runs: the target stays busy")

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
