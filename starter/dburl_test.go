package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// secret is in every password below: the starter's output never holds it.
const secret = "S3cr3t"

// A ledger URL whose password is not URL-escaped is refused (exit 2) with
// a message that says what is wrong and how to fix it, and never quotes
// the password (net/url and lib/pq quote their whole input in errors).
func TestDatabaseURLErrorsNeverShowThePassword(t *testing.T) {
	const notValid = "the database URL is not valid"
	const hint = "escape special characters of the password (%25 for %"
	cases := []struct {
		name, url string
		code      int
		want      []string
	}{
		{"percent", "postgres://fleetsaga:" + secret + "%zz@127.0.0.1:1/fleetsaga", exitUsage, []string{notValid + ": invalid URL escape", hint}},
		{"hash", "postgres://fleetsaga:" + secret + "#x@127.0.0.1:1/fleetsaga", exitUsage, []string{notValid, hint}},
		{"space", "postgres://fleetsaga:" + secret + " x@127.0.0.1:1/fleetsaga", exitUsage, []string{notValid, hint}},
		{"slash", "postgres://fleetsaga:" + secret + "/x@127.0.0.1:1/fleetsaga", exitUsage, []string{notValid, hint}},
		{"question mark", "postgres://fleetsaga:" + secret + "?x@127.0.0.1:1/fleetsaga", exitUsage, []string{notValid, hint}},
		{"digits then slash", "postgres://fleetsaga:2024/" + secret + "@127.0.0.1:1/fleetsaga", exitUsage, []string{notValid + ": @ after the host", hint}},
		{"quote and backslash", `postgres://fleetsaga:` + secret + `"\%zz@127.0.0.1:1/fleetsaga`, exitUsage, []string{notValid, hint}},
		{"key=value", "host=127.0.0.1 port=1 password=" + secret + "%zz dbname=fleetsaga", exitUsage, []string{"must be a postgres:// URL"}},
		{"at, a valid URL", "postgres://fleetsaga:" + secret + "@x@127.0.0.1:1/fleetsaga?sslmode=disable", exitUnreachable, []string{"postgres://fleetsaga:xxxxx@127.0.0.1:1/fleetsaga", "does not answer"}},
	}
	for _, tc := range cases {
		for _, args := range [][]string{{"migrate"}, {"list", "--ledger"}} {
			t.Run(tc.name+"/"+args[0], func(t *testing.T) {
				r := runStarter(t, []string{"TEMPORAL_ADDRESS=127.0.0.1:1", "DATABASE_URL=" + tc.url}, args...)
				require.Equal(t, tc.code, r.code, r.stderr)
				require.NotContains(t, r.stderr+r.stdout, secret)
				for _, w := range tc.want {
					require.Contains(t, r.stderr, w)
				}
			})
		}
	}
}
