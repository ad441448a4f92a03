package ledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// A dry run estimates from this fleet's recent changes: the median of the
// completed attempts that changed something, per kind.
func TestMeasuredDurationsAreTheMedianOfRecentChanges(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	finish := func(n int, took time.Duration, outcome string) {
		a := intent(fmt.Sprintf("fleetsaga/sp-firmware/sp/sled/%d", n), fmt.Sprintf("sp/sled/%d", n), 1)
		require.NoError(t, env.Store.RecordIntent(ctx, a))
		require.NoError(t, env.Store.FinishAttempt(ctx, ledger.Finish{AttemptID: a.ID, State: ledger.StateCompleted, Outcome: outcome}))
		_, err := env.Store.DB().Exec(`UPDATE update_attempt SET created_at = finished_at - $2 * interval '1 millisecond' WHERE id = $1`,
			a.ID, took.Milliseconds())
		require.NoError(t, err)
	}
	finish(1, 2*time.Second, "CompletedUpdate")
	finish(2, 3*time.Second, "CompletedUpdate")
	finish(3, 40*time.Second, "CompletedUpdate") // one slow device moves the median little
	finish(4, 10*time.Millisecond, "FoundNoChangesNeeded")

	got, err := env.Store.MeasuredDurations(ctx, []string{"sp-firmware", "host-flash"}, 50)
	require.NoError(t, err)
	require.Equal(t, map[string]ledger.Measured{"sp-firmware": {Median: 3 * time.Second, Samples: 3}}, got)
}
