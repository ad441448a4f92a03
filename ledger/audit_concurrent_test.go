package ledger_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// Two workers with the key appending to one chain at once leave every row
// signed and the chain intact; their heads never conflict.
func TestConcurrentSignedAppendsSignEveryRow(t *testing.T) {
	l := newSignedLedger(t)
	ctx := context.Background()
	a := intent("owner-c", "sp/sled/c", 1)
	require.NoError(t, l.signing.RecordIntent(ctx, a))
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				// both workers also retry each other's steps
				require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: fmt.Sprint("s", i), Worker: fmt.Sprint("w", w)}))
			}
		}()
	}
	wg.Wait()
	v, err := l.verify(nil)
	require.NoError(t, err)
	require.Equal(t, 40, v.Records)
	var heads int
	require.NoError(t, l.env.Store.DB().QueryRow(`SELECT count(*) FROM audit_head`).Scan(&heads))
	require.Equal(t, 40, heads, "one head per row")
}
