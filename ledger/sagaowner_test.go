package ledger_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// Nexus A moves its sagas to B while B's own expunge is being
// recorded. B's intent waits until A's move has ended (so B's later
// reassignment sees A's sagas), and a move into B after B's intent is
// refused: no saga is moved onto a Nexus whose expunge can finish without
// them.
func TestSagaMoveAndOwnerExpungeAreOrdered(t *testing.T) {
	ctx := context.Background()
	env := testenv.New(t)
	s := env.Store
	b := uuid.New()
	att := zoneAttempt(t, s, b)

	var mu sync.Mutex
	var order []string
	log := func(ev string) { mu.Lock(); order = append(order, ev); mu.Unlock() }
	intentDone := make(chan error, 1)
	err := s.MoveSagasTo(ctx, b, func(ctx context.Context) error {
		go func() {
			_, err := s.RecordZoneExpunge(ctx, ledger.ExpungeIntent{ZoneID: b, SledID: uuid.New(), Kind: "nexus", ExpungedAsOf: 4, AttemptID: att})
			log("intent")
			intentDone <- err
		}()
		// B's intent is blocked on the move's lock (not on time passing).
		require.Eventually(t, func() bool {
			var waiting int
			require.NoError(t, s.DB().QueryRow(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
				AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&waiting))
			return waiting > 0
		}, 10*time.Second, 5*time.Millisecond)
		log("move")
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, <-intentDone)
	assert.Equal(t, []string{"move", "intent"}, order)

	moved := false
	err = s.MoveSagasTo(ctx, b, func(context.Context) error { moved = true; return nil })
	require.ErrorIs(t, err, ledger.ErrOwnerExpunged)
	assert.False(t, moved, "no move into an expunged Nexus")
}
