package ledger_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
)

// A worker writes the ledger from many activities at once. After a burst
// the pool keeps the connections it opened instead of closing all but two
// (database/sql's default): on the benchmark's 1,000 SP updates that churn
// cost PostgreSQL more CPU than the Temporal server (a backend fork and a
// login per connection).
func TestStoreKeepsItsConnectionsAfterABurst(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	db := env.Store.DB()
	for range 2 {
		conns := make([]*sql.Conn, 0, 10)
		for range 10 {
			c, err := db.Conn(ctx)
			require.NoError(t, err)
			require.NoError(t, c.PingContext(ctx))
			conns = append(conns, c)
		}
		for _, c := range conns {
			require.NoError(t, c.Close())
		}
	}
	st := db.Stats()
	assert.Zero(t, st.MaxIdleClosed, "connections closed for want of idle room")
	assert.Equal(t, 10, st.OpenConnections, "the second burst reused the first one's connections")
}
