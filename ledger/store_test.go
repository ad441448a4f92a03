package ledger_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

func intent(update, target string, n int) ledger.Attempt {
	return ledger.Attempt{ID: uuid.New(), UpdateID: update, Attempt: n, Kind: "sp-firmware",
		Target: target, Artifact: "1.0.1", WorkflowID: update, RunID: "run"}
}

func TestMigrateIsIdempotentAndConcurrent(t *testing.T) {
	env := testenv.New(t) // already migrated once
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied, err := env.Store.Migrate(ctx)
			if err == nil && len(applied) > 0 {
				t.Errorf("re-migration applied %v", applied)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var n int
	require.NoError(t, env.Store.DB().QueryRow(`SELECT count(*) FROM schema_migration`).Scan(&n))
	all, err := ledger.Migrations()
	require.NoError(t, err)
	require.Equal(t, len(all), n)
}

func TestMigrateRefusesNewerSchema(t *testing.T) {
	env := testenv.New(t)
	_, err := env.Store.DB().Exec(`INSERT INTO schema_migration (version, name) VALUES (9999, '9999_future.sql')`)
	require.NoError(t, err)
	_, err = env.Store.Migrate(context.Background())
	require.ErrorContains(t, err, "newer than this build")
}

func TestRecordIntentIsIdempotentAndOneActivePerTarget(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	a := intent("fleetsaga/sp-firmware/sled/1", "sp/sled/1", 1)
	require.NoError(t, env.Store.RecordIntent(ctx, a))
	require.NoError(t, env.Store.RecordIntent(ctx, a), "a retried intent write is a no-op")

	other := intent("fleetsaga/host-flash/sled/1", "sp/sled/1", 1)
	err := env.Store.RecordIntent(ctx, other)
	var busy *ledger.ErrTargetBusy
	require.ErrorAs(t, err, &busy)
	require.Equal(t, a.ID, busy.ActiveID)
	require.Equal(t, a.UpdateID, busy.UpdateID)

	require.NoError(t, env.Store.FinishAttempt(ctx, ledger.Finish{AttemptID: a.ID, State: ledger.StateFailed, Outcome: "lost"}))
	require.NoError(t, env.Store.RecordIntent(ctx, other), "the target is free once the first attempt ended")

	attempts, err := env.Store.List(ctx, ledger.ListFilter{Target: "sp/sled/1"})
	require.NoError(t, err)
	require.Len(t, attempts, 2)
}

func TestProgressAndFinishKeepTheFirstEnding(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	a := intent("fleetsaga/sp-firmware/sled/2", "sp/sled/2", 1)
	require.NoError(t, env.Store.RecordIntent(ctx, a))
	require.NoError(t, env.Store.SetProgress(ctx, ledger.Progress{AttemptID: a.ID, Phase: "updating", Done: 10, Total: 100}))
	got, err := env.Store.Get(ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, ledger.StateRunning, got.State)
	require.EqualValues(t, 10, got.Done)

	require.NoError(t, env.Store.FinishAttempt(ctx, ledger.Finish{AttemptID: a.ID, State: ledger.StateCompleted, Outcome: "completed"}))
	require.NoError(t, env.Store.FinishAttempt(ctx, ledger.Finish{AttemptID: a.ID, State: ledger.StateFailed, Outcome: "late retry"}))
	require.NoError(t, env.Store.SetProgress(ctx, ledger.Progress{AttemptID: a.ID, Phase: "late", Done: 1, Total: 1}))
	got, err = env.Store.Get(ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, ledger.StateCompleted, got.State)
	require.Equal(t, "completed", got.Outcome)
	require.Equal(t, "updating", got.Phase)
	require.NotNil(t, got.FinishedAt)

	require.ErrorIs(t, env.Store.SetProgress(ctx, ledger.Progress{AttemptID: uuid.New()}), ledger.ErrNotFound)
}

func TestEventsAreIdempotentAndAppendOnly(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	a := intent("fleetsaga/sp-firmware/sled/3", "sp/sled/3", 1)
	require.NoError(t, env.Store.RecordIntent(ctx, a))
	for range 3 {
		require.NoError(t, env.Store.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "start", Message: "started via mgs/0"}))
	}
	require.NoError(t, env.Store.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "reset"}))
	events, err := env.Store.Events(ctx, a.ID)
	require.NoError(t, err)
	require.Len(t, events, 2)
	require.Equal(t, "start", events[0].Step)

	_, err = env.Store.DB().Exec(`UPDATE update_event SET message = 'rewritten'`)
	require.ErrorContains(t, err, "append-only")
	_, err = env.Store.DB().Exec(`DELETE FROM update_event`)
	require.ErrorContains(t, err, "append-only")
}
