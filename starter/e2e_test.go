package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

var starterBin string

// buildStarter builds the real binary once per test run.
func buildStarter(t *testing.T) string {
	t.Helper()
	if starterBin == "" {
		dir, err := os.MkdirTemp("", "starter-bin-")
		require.NoError(t, err)
		starterBin = filepath.Join(dir, "starter")
		out, err := exec.Command("go", "build", "-o", starterBin, ".").CombinedOutput()
		require.NoError(t, err, string(out))
	}
	return starterBin
}

type result struct {
	code           int
	stdout, stderr string
}

func runStarter(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(buildStarter(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{code, out.String(), errb.String()}
}

func TestUsageErrorsExit2WithOneLineAndContactNothing(t *testing.T) {
	// An address nobody listens on: exit 2 proves validation came first.
	unreachable := []string{"TEMPORAL_ADDRESS=127.0.0.1:1"}
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	require.NoError(t, os.WriteFile(plan, []byte("name: x\nstages:\n- name: s\n  kind: nope\n  concurrency: 0\n  updates: [{}]\n"), 0o644))
	badYAML := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(badYAML, []byte("name: [unclosed\n"), 0o644))
	for name, args := range map[string][]string{
		"unknown flag":      {"list", "--bogus"},
		"bad limit":         {"list", "--limit", "0"},
		"unknown kind":      {"list", "--kind", "nope"},
		"missing arg":       {"status"},
		"bad address":       {"--address", "no-port", "list"},
		"tls half":          {"--tls-cert", "/etc/hostname", "list"},
		"approve no reason": {"approve", "fleetsaga/rollout/plan/x", "--by", "alice"},
		"invalid plan":      {"rollout", plan},
		"malformed plan":    {"rollout", badYAML},
		"missing plan":      {"rollout", "/nonexistent.yaml"},
		"migrate bad url":   {"migrate", "--database-url", "mysql://x"},
		"explain an update": {"explain", "fleetsaga/sp-firmware/sp/sled/1"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runStarter(t, unreachable, args...)
			require.Equal(t, exitUsage, r.code, "stderr: %s", r.stderr)
			require.Contains(t, r.stderr, "starter: ")
			require.NotContains(t, r.stderr, "cannot reach Temporal")
		})
	}
}

func TestUnreachableTemporalExits4(t *testing.T) {
	r := runStarter(t, []string{"TEMPORAL_ADDRESS=127.0.0.1:1"}, "list")
	require.Equal(t, exitUnreachable, r.code, r.stderr)
	require.Contains(t, r.stderr, "cannot reach Temporal at 127.0.0.1:1")
}

func TestMigrateAndListAgainstTheRealStack(t *testing.T) {
	env := testenv.New(t)
	vars := []string{"TEMPORAL_ADDRESS=" + env.TemporalAddress(), "DATABASE_URL=" + env.DatabaseURL}

	r := runStarter(t, vars, "migrate", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var mig struct{ Applied []int }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &mig))
	require.Empty(t, mig.Applied, "the test database is already migrated")

	r = runStarter(t, vars, "list", "--json", "--target", "nothing/here")
	require.Equal(t, exitOK, r.code, r.stderr)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rows))
	require.Empty(t, rows)

	r = runStarter(t, vars, "status", "fleetsaga/sp-firmware/sp/sled/999")
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "no update with workflow ID")

	r = runStarter(t, vars, "cancel", "fleetsaga/sp-firmware/sp/sled/999")
	require.Equal(t, exitUsage, r.code, r.stderr)
}
