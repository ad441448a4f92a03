package ledger

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// secret is in every password below: no redacted text may contain it.
const secret = "S3cr3t"

// awkwardDSNs are database URLs and libpq connection strings whose password
// an operator did not (or could not) URL-escape.
var awkwardDSNs = []struct{ name, dsn string }{
	{"escaped", "postgres://fleetsaga:" + secret + "%25x@db.example:5432/fleetsaga?sslmode=disable"},
	{"percent", "postgres://fleetsaga:" + secret + "%zz@db.example/fleetsaga"},
	{"hash", "postgres://fleetsaga:" + secret + "#x@db.example/fleetsaga"},
	{"space", "postgres://fleetsaga:" + secret + " x@db.example/fleetsaga"},
	{"at", "postgres://fleetsaga:" + secret + "@x@db.example/fleetsaga"},
	{"slash", "postgres://fleetsaga:" + secret + "/x@db.example/fleetsaga"},
	{"question mark", "postgres://fleetsaga:" + secret + "?x@db.example/fleetsaga"},
	{"digits then slash", "postgres://fleetsaga:2024/" + secret + "@db.example/fleetsaga"},
	{"digits then hash", "postgres://fleetsaga:2024#" + secret + "@db.example/fleetsaga"},
	{"quote and backslash", `postgres://fleetsaga:` + secret + `"\%zz@db.example/fleetsaga`},
	{"password in the query", "postgres://fleetsaga@db.example/fleetsaga?sslmode=disable&password=" + secret + "%zz"},
	{"key=value", "host=db.example user=fleetsaga password=" + secret + " dbname=fleetsaga"},
	{"key=value quoted", `host=db.example password='` + secret + ` x\'y' dbname=fleetsaga`},
	{"key=value unquoted space", "host=db.example password=" + secret + " x dbname=fleetsaga"},
	{"key=value unterminated", "host=db.example password='" + secret + " dbname=fleetsaga"},
}

func TestRedactURLHidesEveryPassword(t *testing.T) {
	for _, tc := range awkwardDSNs {
		t.Run(tc.name, func(t *testing.T) {
			got := RedactURL(tc.dsn)
			require.NotContains(t, got, secret)
			require.Contains(t, got, "xxxxx", "says a password was there")
		})
	}
}

func TestRedactURLKeepsWhatIsNotSecret(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://fleetsaga:pw@db.example:5432/fleetsaga?sslmode=verify-full": "postgres://fleetsaga:xxxxx@db.example:5432/fleetsaga?sslmode=verify-full",
		"postgres://fleetsaga@db.example/fleetsaga":                             "postgres://fleetsaga@db.example/fleetsaga",
		"postgres://fleetsaga:p@ss@db.example/fleetsaga":                        "postgres://fleetsaga:xxxxx@db.example/fleetsaga",
		"postgres://db.example/fleetsaga?password=pw&sslmode=disable":           "postgres://db.example/fleetsaga?password=xxxxx&sslmode=disable",
		"host=db.example password='p w' dbname=fleetsaga":                       "host=db.example password=xxxxx dbname=fleetsaga",
		"host=db.example dbname=fleetsaga":                                      "host=db.example dbname=fleetsaga",
	} {
		require.Equal(t, want, RedactURL(dsn), dsn)
	}
}

// Open never quotes a password: not in a parse error (lib/pq and net/url
// quote their whole input), nor when the server does not answer.
func TestOpenErrorsHoldNoPassword(t *testing.T) {
	ctx := context.Background()
	for _, tc := range awkwardDSNs {
		t.Run(tc.name, func(t *testing.T) {
			// Port 1 on loopback: nobody answers, at once.
			dsn := strings.ReplaceAll(tc.dsn, "db.example:5432", "127.0.0.1:1")
			dsn = strings.ReplaceAll(dsn, "db.example", "127.0.0.1:1")
			dsn = strings.ReplaceAll(dsn, "host=127.0.0.1:1", "host=127.0.0.1 port=1")
			_, err := Open(ctx, dsn)
			require.Error(t, err)
			require.NotContains(t, err.Error(), secret)
			for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
				require.NotContains(t, e.Error(), secret, "nor in what it wraps")
			}
		})
	}
}
