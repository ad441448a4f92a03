package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/fleetsaga/fleetsaga/internal/devstack"
)

// TestChaosShort is the short chaos variant `make test` runs: the real
// stack, a rollout over every kind with a few targets each, worker
// SIGKILLs, a PostgreSQL and a Temporal restart, faults of every kind, and
// every invariant checked. FLEETSAGA_CHAOS_SEED picks another seed.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: the real stack with restarts (skipped with -short)")
	}
	seed := int64(1)
	if s := os.Getenv("FLEETSAGA_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("FLEETSAGA_CHAOS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	bin := buildBinaries(t)
	// Not t.TempDir(): the private PostgreSQL runs as the postgres user and
	// needs to reach the directory.
	dir, err := os.MkdirTemp("", "fleetsaga-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o755)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("state and logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	t.Setenv("DATABASE_URL", "") // chaos restarts PostgreSQL: it needs its own
	// Whether every scheduled attack finds a child to hit depends on the
	// run's timing (a loaded machine can end a stage before the attack's
	// tick): a run short of coverage is run once more, and a second short
	// run is reported, not failed (`make chaos` and bin/chaos still fail
	// on it). An invariant violation fails at once, in any run.
	for run := 1; ; run++ {
		short, err := chaosRun(t, seed, bin, filepath.Join(dir, "seed-"+strconv.FormatInt(seed, 10)+"-run-"+strconv.Itoa(run)))
		if err != nil {
			t.Fatal(err)
		}
		if short == "" {
			return
		}
		if run == maxCoverageRuns {
			t.Logf("chaos seed %d: NOT FULLY EXERCISED: %s (in each of %d runs; every invariant held)", seed, short, run)
			return
		}
		t.Logf("chaos seed %d: %s; running it again", seed, short)
	}
}

// maxCoverageRuns bounds the runs of a seed whose attacks did not all find
// a target.
const maxCoverageRuns = 2

// chaosRun runs seed once in dir. It returns an error for a failed run or
// an invariant violation, and what the run did not exercise ("" when it
// exercised everything it planned).
func chaosRun(t *testing.T, seed int64, bin, dir string) (string, error) {
	cfg := Short(seed)
	cfg.BinDir = bin
	cfg.Dir = dir
	out := &lineLogger{t: t}
	cfg.Out = out
	cfg.Log = zerolog.New(zerolog.ConsoleWriter{Out: out, NoColor: true}).Level(zerolog.WarnLevel)
	rep, err := Run(context.Background(), cfg)
	out.flush()
	switch {
	case err != nil:
		return "", fmt.Errorf("chaos run (seed %d): %v", seed, err)
	case rep.Violations() > 0:
		return "", fmt.Errorf("chaos seed %d: %d invariant violation(s); see the table above", seed, rep.Violations())
	}
	if s := rep.ChaosShortfall(); s != "" {
		return "the rollout ended before the chaos did (" + s + ")", nil
	}
	if s := rep.Uncovered(); s != "" {
		return "the run did not exercise what it claims: " + s, nil
	}
	return "", nil
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// buildBinaries builds the worker and fleetsim the stack runs.
func buildBinaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := devstack.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		if binDir, err = os.MkdirTemp("", "fleetsaga-chaos-bin-"); err != nil {
			buildErr = err
			return
		}
		for name, pkg := range map[string]string{"worker": "./worker", "fleetsim": "./fleetsim/cmd/fleetsim", "starter": "./starter"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, name), pkg)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = &buildError{pkg: pkg, out: string(out), err: err}
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	t.Cleanup(func() { _ = os.RemoveAll(binDir) })
	return binDir
}

type buildError struct {
	pkg, out string
	err      error
}

func (e *buildError) Error() string { return "build " + e.pkg + ": " + e.err.Error() + "\n" + e.out }

// lineLogger writes whole lines to t.Log.
type lineLogger struct {
	t   *testing.T
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil {
			l.buf.WriteString(line)
			return len(p), nil
		}
		l.t.Log(strings.TrimRight(line, "\n"))
	}
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len() > 0 {
		l.t.Log(l.buf.String())
		l.buf.Reset()
	}
}
