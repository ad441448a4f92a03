package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// secret is in every password below: the worker's output never holds it.
const secret = "S3cr3t"

// A database URL whose password is not URL-escaped is refused with a
// message that says what is wrong and how to fix it, and never quotes the
// password (net/url and lib/pq quote their whole input in their errors).
func TestDatabaseURLErrorsNeverShowThePassword(t *testing.T) {
	bin := buildWorker(t)
	const notValid = "the database URL is not valid"
	const hint = "escape special characters of the password (%25 for %"
	cases := []struct {
		name, flag, url string
		code            int
		want            []string
	}{
		{"percent", "--database-url", "postgres://fleetsaga:" + secret + "%zz@127.0.0.1:1/fleetsaga", 2, []string{notValid + ": invalid URL escape", hint}},
		{"hash", "--database-url", "postgres://fleetsaga:" + secret + "#x@127.0.0.1:1/fleetsaga", 2, []string{notValid, hint}},
		{"space", "--database-url", "postgres://fleetsaga:" + secret + " x@127.0.0.1:1/fleetsaga", 2, []string{notValid, hint}},
		{"slash", "--database-url", "postgres://fleetsaga:" + secret + "/x@127.0.0.1:1/fleetsaga", 2, []string{notValid, hint}},
		{"question mark", "--database-url", "postgres://fleetsaga:" + secret + "?x@127.0.0.1:1/fleetsaga", 2, []string{notValid, hint}},
		{"digits then slash", "--database-url", "postgres://fleetsaga:2024/" + secret + "@127.0.0.1:1/fleetsaga", 2, []string{notValid + ": @ after the host", hint}},
		{"digits then hash", "--database-url", "postgres://fleetsaga:2024#" + secret + "@127.0.0.1:1/fleetsaga", 2, []string{notValid + ": @ after the host", hint}},
		{"quote and backslash", "--database-url", `postgres://fleetsaga:` + secret + `"\%zz@127.0.0.1:1/fleetsaga`, 2, []string{notValid, hint}},
		{"key=value", "--database-url", "host=127.0.0.1 port=1 password=" + secret + "%zz dbname=fleetsaga", 2, []string{"must be a postgres:// URL"}},
		{"at, a valid URL", "--database-url", "postgres://fleetsaga:" + secret + "@x@127.0.0.1:1/fleetsaga?sslmode=disable", 1, []string{"postgres://fleetsaga:xxxxx@127.0.0.1:1/fleetsaga", "does not answer"}},
		{"nexus database", "--nexus-db-url", "postgres://root:" + secret + "%zz@127.0.0.1:1/omicron", 2, []string{"--nexus-db-url: " + notValid + ": invalid URL escape", hint}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{tc.flag, tc.url}
			if tc.flag != "--database-url" {
				args = append(args, "--database-url", "postgres://x@127.0.0.1:1/x")
			}
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "DATABASE_URL=", "NEXUS_DATABASE_URL=", "FLEETSIM_URL=", "FLEETSAGA_DEPLOYMENT_NAME=", "FLEETSAGA_BUILD_ID=")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			out := stderr.String()
			require.Equal(t, tc.code, ee.ExitCode(), out)
			require.NotContains(t, out, secret)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			require.Len(t, lines, 1, "exactly one line: %q", out)
			for _, w := range tc.want {
				require.Contains(t, lines[0], w)
			}
		})
	}
}
