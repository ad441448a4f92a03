package devstack

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A DATABASE_URL that does not answer is logged with Ping's error before
// the stack tries the next server: that error, and those of the stack's
// other readers of the URL, never hold its password, also when net/url
// cannot parse the URL (its errors and lib/pq's quote it whole).
func TestDatabaseURLErrorsHoldNoPassword(t *testing.T) {
	const secret = "S3cr3t"
	for _, raw := range []string{
		"postgres://fleetsaga:" + secret + "%zz@127.0.0.1:1/fleetsaga",
		"postgres://fleetsaga:" + secret + " x@127.0.0.1:1/fleetsaga",
		"postgres://fleetsaga:" + secret + "#x@127.0.0.1:1/fleetsaga",
		"postgres://fleetsaga:2024/" + secret + "@127.0.0.1:1/fleetsaga",
		"postgres://fleetsaga:" + secret + "@x@127.0.0.1:1/fleetsaga?sslmode=disable",
		"host=127.0.0.1 port=1 password=" + secret + " x",
	} {
		err := Ping(context.Background(), raw)
		require.Error(t, err, raw)
		require.NotContains(t, err.Error(), secret)
	}
	_, err := withDatabase("postgres://fleetsaga:"+secret+"%zz@127.0.0.1:1/postgres", "fleetsaga_test")
	require.Error(t, err)
	require.NotContains(t, err.Error(), secret)
	_, err = SQLServerFromURL("postgres://fleetsaga:" + secret + "%zz@127.0.0.1:1/postgres")
	require.Error(t, err)
	require.NotContains(t, err.Error(), secret)
}
