package chaos

import (
	"bytes"
	"context"
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
	cfg := Short(seed)
	cfg.BinDir = buildBinaries(t)
	// Not t.TempDir(): the private PostgreSQL runs as the postgres user and
	// needs to reach the directory.
	dir, err := os.MkdirTemp("", "fleetsaga-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o755)
	cfg.Dir = filepath.Join(dir, "seed-"+strconv.FormatInt(seed, 10))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("state and logs kept in %s", cfg.Dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	t.Setenv("DATABASE_URL", "") // chaos restarts PostgreSQL: it needs its own
	out := &lineLogger{t: t}
	cfg.Out = out
	cfg.Log = zerolog.New(zerolog.ConsoleWriter{Out: out, NoColor: true}).Level(zerolog.WarnLevel)
	rep, err := Run(context.Background(), cfg)
	out.flush()
	if err != nil {
		t.Fatalf("chaos run (seed %d): %v", seed, err)
	}
	if rep.Violations() > 0 {
		t.Fatalf("chaos seed %d: %d invariant violation(s); see the table above", seed, rep.Violations())
	}
	if s := rep.ChaosShortfall(); s != "" {
		t.Fatalf("chaos seed %d: the rollout ended before the chaos did (%s)", seed, s)
	}
	if s := rep.Uncovered(); s != "" {
		t.Fatalf("chaos seed %d: the run did not exercise what it claims: %s", seed, s)
	}
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
