// Package e2e drives the real binaries (worker, fleetsim, starter) on the
// real stack: PostgreSQL, a Temporal dev server (with its Web UI), fleetsim
// and worker processes, as an operator would.
package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds worker, fleetsim, starter and devstack once per test run.
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := devstack.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		binDir, err = os.MkdirTemp("", "fleetsaga-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		for name, pkg := range map[string]string{"worker": "./worker", "fleetsim": "./fleetsim/cmd/fleetsim", "starter": "./starter", "devstack": "./cmd/devstack"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, name), pkg)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = &buildError{pkg, string(out), err}
				return
			}
		}
	})
	require.NoError(t, buildErr)
	return binDir
}

type buildError struct {
	pkg, out string
	err      error
}

func (e *buildError) Error() string { return "build " + e.pkg + ": " + e.err.Error() + "\n" + e.out }

// startStack brings up a whole stack for one test with the given fleet, on
// the Temporal dev server.
func startStack(t *testing.T, s *spec.Spec, workers, uiPort int) *devstack.Stack {
	t.Helper()
	return startStackOn(t, devstack.TemporalDev, s, workers, uiPort)
}

// startStackOn is startStack on the given Temporal (devstack.TemporalDev or
// devstack.TemporalCluster).
func startStackOn(t *testing.T, temporal string, s *spec.Spec, workers, uiPort int) *devstack.Stack {
	t.Helper()
	return startStackWith(t, s, devstack.StackOptions{Temporal: temporal, Workers: workers, UIPort: uiPort})
}

// startStackWith brings up a stack with the given fleet and options (its
// directory, binaries and database are the test's own).
func startStackWith(t *testing.T, s *spec.Spec, o devstack.StackOptions) *devstack.Stack {
	t.Helper()
	// Each stack has its own Temporal, fleetsim and database: its test
	// runs beside the others (go test -parallel bounds how many).
	t.Parallel()
	dir := t.TempDir()
	b, err := yaml.Marshal(s)
	require.NoError(t, err)
	specPath := filepath.Join(dir, "fleet.yaml")
	require.NoError(t, os.WriteFile(specPath, b, 0o644))
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	database := "e2e_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	o.Dir, o.BinDir, o.FleetsimSpec, o.Database = dir, binaries(t), specPath, database
	if o.ArtifactRoot == "" {
		o.ArtifactRoot = os.TempDir() // the tests write their artifacts in temp dirs
	}
	logs := func() {
		for _, f := range []string{"worker-0.log", "worker-1.log", "fleetsim.log", "temporal.out", "temporal.log"} {
			if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
				t.Logf("---- %s (tail) ----\n%s", f, tail(string(b), 3000))
			}
		}
	}
	stack, err := devstack.StartStack(context.Background(), o, log)
	if err != nil {
		logs()
	}
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			logs()
		}
		stack.Stop()
		// The stack's databases (the cluster's two beside the ledger's) on
		// a server the user named outlive it otherwise.
		for _, db := range []string{database, database + "_temporal", database + "_temporal_visibility"} {
			_ = devstack.DropDatabase(context.Background(), stack.PG.URL, db)
		}
	})
	return stack
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
