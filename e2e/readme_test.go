package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/internal/plan"
)

// repoRoot is the top of the clone these tests run from.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// readmeExample returns the fenced block after <!-- readme-example: NAME -->.
func readmeExample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	require.NoError(t, err)
	re := regexp.MustCompile("(?s)<!-- readme-example: " + regexp.QuoteMeta(name) + " -->\n```[a-z]*\n(.*?)```")
	m := re.FindSubmatch(b)
	require.NotNil(t, m, "README.md has no example %q", name)
	return string(m[1])
}

// The README's plan example is a valid plan.
func TestReadmePlanExampleIsValid(t *testing.T) {
	_, err := plan.Parse([]byte(readmeExample(t, "plan")))
	require.NoError(t, err)
}

// newcomerClone copies the tree (as it is, uncommitted work included) into
// a clone below a 0700 directory, as `cd ~ && git clone …` as root does.
func newcomerClone(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	require.NoError(t, os.Chmod(home, 0o700))
	clone := filepath.Join(home, "fleetsaga")
	require.NoError(t, os.Mkdir(clone, 0o755))
	files, err := exec.Command("git", "-C", repoRoot(t), "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	require.NoError(t, err)
	tar := exec.Command("sh", "-c", `tar -C "$1" --null -T - -cf - | tar -C "$2" -xf -`, "sh", repoRoot(t), clone)
	tar.Stdin = bytes.NewReader(files)
	out, err := tar.CombinedOutput()
	require.NoError(t, err, string(out))
	return clone
}

// newcomerEnv is a shell with nothing fleetsaga-specific typed: no
// DATABASE_URL, no libpq variables, no stack of ours (make test runs inside
// one), a free port for the Web UI.
func newcomerEnv(t *testing.T) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "PG"), strings.HasPrefix(k, "TEMPORAL_"), strings.HasPrefix(k, "FLEETSIM"),
			strings.HasPrefix(k, "FLEETSAGA_"), k == "DATABASE_URL", k == "NEXUS_DATABASE_URL", k == "MAKEFLAGS", k == "MFLAGS":
			continue
		}
		env = append(env, kv)
	}
	port, err := devstack.FreePort()
	require.NoError(t, err)
	return append(env, "UI_PORT="+strconv.Itoa(port))
}

func runIn(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %v in %s:\n%s", name, args, dir, tail(string(out), 6000))
	return string(out)
}

// A newcomer's first hour, on a clone below a 0700 home as root: make demo
// passes twice with the same outcomes (each run starts from a fresh ledger
// and fleet), and the README's operating example runs as written.
func TestNewcomerFromAPrivateHome(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel() // a clone and a stack of its own; mostly waiting on the demo
	clone, env := newcomerClone(t), newcomerEnv(t)
	t.Cleanup(func() {
		cmd := exec.Command("make", "down")
		cmd.Dir, cmd.Env = clone, env
		_ = cmd.Run()
	})

	first := runIn(t, clone, env, "make", "demo")
	require.Contains(t, first, "== demo: every update ended as expected")
	require.Contains(t, first, "PostgreSQL: using a private cluster")
	second := runIn(t, clone, env, "make", "demo")
	require.Contains(t, second, "== demo: every update ended as expected")
	outcomes := func(dir string) string {
		b, err := os.ReadFile(filepath.Join(dir, ".stack/demo/outcomes.txt"))
		require.NoError(t, err)
		return string(b)
	}
	want, err := os.ReadFile(filepath.Join(clone, "demo/expected-outcomes.txt"))
	require.NoError(t, err)
	require.Equal(t, string(want), outcomes(clone), "the second demo's outcomes")

	script := "set -euo pipefail\n" + readmeExample(t, "operating")
	out := runIn(t, clone, env, "bash", "-c", script)
	require.Contains(t, out, "stack stopped", "make down ends the example")
	for _, stack := range []string{".stack/demo/pg", ".stack/up/pg"} {
		dir := devstack.PrivateClusterDir(filepath.Join(clone, stack))
		_, err := os.Stat(dir)
		require.True(t, os.IsNotExist(err), "%s left its private cluster at %s", stack, dir)
	}
}
