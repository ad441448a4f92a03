package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/internal/logging"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// TemporalCLIVersion is the pinned Temporal CLI (dev server + Web UI); the
// pin itself lives in tools/go.mod.
const TemporalCLIVersion = "v1.5.1"

// CacheDir is where built tools are kept between runs.
func CacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "fleetsaga")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "fleetsaga-cache")
	}
	return filepath.Join(home, ".cache", "fleetsaga")
}

// TemporalBinary returns the Temporal CLI to run: $FLEETSAGA_TEMPORAL_BIN,
// else the pinned build in the cache, else a `temporal` on PATH, else it
// builds the pinned version from tools/go.mod (a few minutes, once).
func TemporalBinary(log zerolog.Logger) (string, error) {
	return toolBinary(log, Tool{Env: "FLEETSAGA_TEMPORAL_BIN", File: "temporal-" + TemporalCLIVersion,
		Package: "github.com/temporalio/cli/cmd/temporal", OnPath: "temporal"})
}

// Tool is a binary pinned in tools/go.mod and built into the cache once.
type Tool struct {
	Env     string // a variable that names a binary to use instead
	File    string // its name in CacheDir()/bin, version included
	Package string // the Go package to build from tools/go.mod
	OnPath  string // a command on PATH to use when the cache has none ("" = never)
}

// toolBinary returns t's binary: $Env, else the cached build, else OnPath,
// else it builds it from tools/go.mod into the cache.
func toolBinary(log zerolog.Logger, t Tool) (string, error) {
	if p := os.Getenv(t.Env); p != "" {
		return p, nil
	}
	cached := filepath.Join(CacheDir(), "bin", t.File)
	if _, err := os.Stat(cached); err == nil {
		return cached, nil
	}
	if t.OnPath != "" {
		if p, err := exec.LookPath(t.OnPath); err == nil {
			return p, nil
		}
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("no %s found and cannot build one: %w", t.File, err)
	}
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
		return "", err
	}
	// Parallel test packages may all get here: one builds, the others wait.
	lock, err := os.OpenFile(cached+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	if _, err := os.Stat(cached); err == nil {
		return cached, nil
	}
	log.Info().Str("binary", t.File).Msg("building a pinned Temporal binary once (a few minutes on 2 cores)")
	cmd := exec.Command("go", "build", "-o", cached+".tmp", t.Package)
	cmd.Dir = filepath.Join(root, "tools")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %v: %s", t.File, err, lastLines(out, 10))
	}
	return cached, os.Rename(cached+".tmp", cached)
}

// RepoRoot finds the fleetsaga checkout from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "tools", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside a fleetsaga checkout (no tools/go.mod above the working directory)")
		}
		dir = parent
	}
}

// TemporalOptions configure a dev server.
type TemporalOptions struct {
	Port   int    // 0 picks a free port
	UIPort int    // 0 disables the Web UI
	DBFile string // empty keeps history in memory
	Output io.Writer
}

// StartTemporal starts the pinned Temporal dev server with fleetsaga's
// search attributes registered.
func StartTemporal(ctx context.Context, o TemporalOptions, log zerolog.Logger) (*testsuite.DevServer, error) {
	// A port picked free may be taken before the server binds it (tests
	// start many servers at once): a server that never answers is tried
	// again on another port.
	pick := o.Port == 0
	for attempt := 1; ; attempt++ {
		srv, err := startTemporalOnce(ctx, o, log)
		if err == nil || !pick || attempt == 3 || ctx.Err() != nil {
			return srv, err
		}
		log.Warn().Err(err).Int("attempt", attempt).Msg("Temporal dev server did not come up; trying another port")
		o.Port = 0
	}
}

func startTemporalOnce(ctx context.Context, o TemporalOptions, log zerolog.Logger) (*testsuite.DevServer, error) {
	bin, err := TemporalBinary(log)
	if err != nil {
		return nil, err
	}
	if o.Port == 0 {
		if o.Port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	var sas []temporal.SearchAttributeUpdate
	for _, k := range workflows.SearchAttributes() {
		sas = append(sas, k.ValueSet(""))
	}
	opts := testsuite.DevServerOptions{
		ExistingPath: bin,
		ClientOptions: &client.Options{
			HostPort:  "127.0.0.1:" + strconv.Itoa(o.Port),
			Namespace: "default",
			Logger:    logging.Temporal(log.Level(zerolog.WarnLevel)),
		},
		DBFilename:       o.DBFile,
		LogLevel:         "error",
		SearchAttributes: temporal.NewSearchAttributes(sas...),
		Stdout:           o.Output,
		Stderr:           o.Output,
		// Eager activities: a worker that schedules an activity runs it from
		// its workflow task's reply, without a matching round trip (off by
		// default in the server). Worker deployments: see maxDeployments.
		ExtraArgs: []string{"--dynamic-config-value", "system.enableActivityEagerExecution=true",
			"--dynamic-config-value", "matching.maxDeployments=" + strconv.Itoa(maxDeployments)},
	}
	if o.UIPort != 0 {
		opts.EnableUI = true
		opts.UIPort = strconv.Itoa(o.UIPort)
	}
	srv, err := testsuite.StartDevServer(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("start Temporal dev server (%s): %w", bin, err)
	}
	return srv, nil
}
