package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var workerBin string

// buildWorker builds the real binary once per test run.
func buildWorker(t *testing.T) string {
	t.Helper()
	if workerBin == "" {
		dir, err := os.MkdirTemp("", "worker-bin-")
		require.NoError(t, err)
		bin := filepath.Join(dir, "worker")
		out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
		require.NoError(t, err, string(out))
		workerBin = bin
	}
	return workerBin
}

// Bad configuration is one clear line on stderr and a non-zero exit, never
// a stack trace.
func TestBadConfigurationFailsWithOneLine(t *testing.T) {
	bin := buildWorker(t)
	plainSecret := filepath.Join(t.TempDir(), "ops.secret")
	require.NoError(t, os.WriteFile(plainSecret, []byte("hunter2\n"), 0o600))
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"malformed address", []string{"--address", "temporal", "--database-url", "postgres://x@127.0.0.1/x"}, 2, `--address: "temporal" is not host:port`},
		{"bad port", []string{"--address", "h:99999", "--database-url", "postgres://x@127.0.0.1/x"}, 2, "bad port"},
		{"no database", []string{"--database-url", ""}, 2, "--database-url is required"},
		{"not postgres", []string{"--database-url", "mysql://x"}, 2, "must be a postgres:// URL"},
		{"bad log level", []string{"--database-url", "postgres://x@127.0.0.1/x", "--log-level", "loud"}, 2, "bad log level"},
		{"bad endpoint", []string{"--database-url", "postgres://x@127.0.0.1/x", "--cnapi", "ftp://x"}, 2, "not an http(s) URL"},
		{"build ID without deployment", []string{"--database-url", "postgres://x@127.0.0.1/x", "--build-id", "v2"}, 2, "--build-id needs --deployment-name"},
		{"deployment without build ID", []string{"--database-url", "postgres://x@127.0.0.1/x", "--deployment-name", "fleetsaga"}, 2, "--deployment-name needs --build-id"},
		{"unknown flag", []string{"--frobnicate"}, 2, "unknown flag"},
		{"artifact root missing", []string{"--database-url", "postgres://x@127.0.0.1/x", "--artifact-root", "/nonexistent/artifacts"}, 2, "--artifact-root /nonexistent/artifacts: no such file or directory"},
		{"artifact root a file", []string{"--database-url", "postgres://x@127.0.0.1/x", "--artifact-root", plainSecret}, 2, "not a directory"},
		{"health check host a URL", []string{"--database-url", "postgres://x@127.0.0.1/x", "--health-check-host", "http://monitor/"}, 2, "--health-check-host \"http://monitor/\": want a host name or host:port"},
		{"webhook secret not whsec_", []string{"--database-url", "postgres://x@127.0.0.1/x", "--webhook", "ops=http://127.0.0.1:9/",
			"--webhook-secret-file", "ops=" + plainSecret}, 2, "must be whsec_ followed by the key in base64"},
		{"audit signing key not a key", []string{"--database-url", "postgres://x@127.0.0.1/x", "--audit-signing-key", plainSecret}, 2,
			"audit signing key " + plainSecret + ": not an unencrypted OpenSSH private key"},
		{"audit signing key missing", []string{"--database-url", "postgres://x@127.0.0.1/x", "--audit-signing-key", "/nonexistent/audit_head"}, 2,
			"audit signing key: open /nonexistent/audit_head: no such file or directory"},
		{"nexus external CA not a certificate", []string{"--database-url", "postgres://x@127.0.0.1/x", "--nexus-external", "https://recovery.sys.example",
			"--nexus-external-ca", plainSecret}, 2, "--nexus-external-ca: nexus external CA " + plainSecret + " holds no PEM certificate"},
		{"per-rack token file without {rack}", []string{"--database-url", "postgres://x@127.0.0.1/x", "--nexus-external", "https://recovery.sys.example",
			"--nexus-external-token-file", "/etc/fleetsaga/{rack}.token"}, 2, "token file names {rack} but the nexus-external endpoint does not"},
		{"unreachable database", []string{"--database-url", "postgres://postgres@127.0.0.1:1/x?sslmode=disable"}, 1, "does not answer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Env = append(os.Environ(), "DATABASE_URL=", "FLEETSAGA_DEPLOYMENT_NAME=", "FLEETSAGA_BUILD_ID=")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, tc.code, ee.ExitCode(), stderr.String())
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			require.Len(t, lines, 1, "exactly one line: %q", stderr.String())
			require.Contains(t, lines[0], tc.want)
			require.True(t, strings.HasPrefix(lines[0], "worker: "))
			require.NotContains(t, stderr.String(), "hunter2", "no secret in an error")
		})
	}
}
