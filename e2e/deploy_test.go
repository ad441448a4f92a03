package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/config"
)

// envFile reads KEY=VALUE lines (comments and blank lines skipped, one
// level of single or double quotes removed), as systemd and sh read them.
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	vars := map[string]string{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, "%s: not KEY=VALUE: %q", path, line)
		if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		vars[k] = v
	}
	return vars
}

// The deployment's endpoints file names only what the worker reads, and its
// values pass the worker's own configuration checks.
func TestWorkerEndpointsFileIsWhatTheWorkerReads(t *testing.T) {
	vars := envFile(t, filepath.Join(repoRoot(t), "deploy", "worker.env"))
	read := envRead(t, "worker")
	for k := range vars {
		require.True(t, read[k], "deploy/worker.env sets %s, which the worker does not read", k)
	}
	for k, v := range vars {
		t.Setenv(k, v)
	}
	// The kubeconfig is read at start: stand in a minimal one for the node's.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c1, cluster: {server: "https://api.c1.example.internal:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c1, context: {cluster: c1, user: u}}]
`), 0o600))
	t.Setenv("FLEETSAGA_KUBECONFIG", kubeconfig)
	fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
	var fl config.Fleet
	fl.Bind(fs)
	require.NoError(t, fs.Parse(nil))
	e, err := fl.Endpoints()
	require.NoError(t, err)
	require.Len(t, e.MGS, 2)
	require.NotEmpty(t, e.NexusDB)
	require.NoError(t, config.ValidateDatabaseURL(vars["DATABASE_URL"]))
	requireVersioned(t, "deploy/worker.env", vars)
}

// requireVersioned checks that an environment runs the worker as a Worker
// Deployment version: since 1.0 device kinds change without GetVersion
// markers, which is safe only on versioned workers.
func requireVersioned(t *testing.T, where string, env map[string]string) {
	t.Helper()
	d := config.Deployment{Name: env[config.EnvDeploymentName], BuildID: env[config.EnvBuildID]}
	require.NoError(t, d.Validate(), where)
	require.True(t, d.Versioned(), "%s does not set %s and %s: its workers would run unversioned", where, config.EnvDeploymentName, config.EnvBuildID)
}

// The systemd unit is one systemd accepts, with no warning, and runs a
// versioned worker: its environment (Environment= and the endpoints file
// it reads) names the deployment and the build.
func TestWorkerSystemdUnitVerifies(t *testing.T) {
	unit, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "fleetsaga-worker.service"))
	require.NoError(t, err)
	env := map[string]string{}
	for _, line := range strings.Split(string(unit), "\n") {
		if f, ok := strings.CutPrefix(line, "EnvironmentFile="); ok {
			// deploy/worker.env is installed as the file the unit reads.
			require.Equal(t, "/etc/fleetsaga/worker.env", f)
			for k, v := range envFile(t, filepath.Join(repoRoot(t), "deploy", "worker.env")) {
				env[k] = v
			}
		}
	}
	for _, line := range strings.Split(string(unit), "\n") {
		if kv, ok := strings.CutPrefix(line, "Environment="); ok {
			k, v, _ := strings.Cut(kv, "=")
			if _, set := env[k]; !set { // EnvironmentFile= overrides Environment=
				env[k] = v
			}
		}
	}
	requireVersioned(t, "deploy/fleetsaga-worker.service", env)
	// verify checks that ExecStart exists: point it at the built worker.
	text := strings.ReplaceAll(string(unit), "/usr/local/bin/fleetsaga-worker", filepath.Join(binaries(t), "worker"))
	path := filepath.Join(t.TempDir(), "fleetsaga-worker.service")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput()
	require.NoError(t, err, "systemd-analyze verify: %s", out)
	require.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify warned")
}
