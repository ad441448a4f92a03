// Package testenv gives integration tests the real stack: a PostgreSQL
// database of their own, a real Temporal dev server, in-process workers and
// fleetsim. `make test` starts PostgreSQL and Temporal once and passes them
// in DATABASE_URL and TEMPORAL_ADDRESS; a plain `go test` starts them itself.
package testenv

import (
	"context"
	"fmt"

	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/buildid"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/internal/logging"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
)

var shared struct {
	once     sync.Once
	err      error
	pg       *devstack.Postgres
	temporal *testsuite.DevServer
	address  string
}

// Main wraps a package's tests and stops what they started. Use it as
// func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	if shared.temporal != nil {
		_ = shared.temporal.Stop()
	}
	if shared.pg != nil {
		_ = shared.pg.Stop()
	}
	return code
}

func start() error {
	ctx := context.Background()
	log := zerolog.New(zerolog.NewTestWriter(nil)).Level(zerolog.Disabled)
	// The private cluster (when no server is named) is keyed by this test
	// binary; if it is killed, the next start removes what it left.
	var err error
	key := filepath.Join(os.TempDir(), fmt.Sprintf("fleetsaga-test-%d", os.Getpid()))
	if shared.pg, err = devstack.FindOrStartPostgres(ctx, key, log); err != nil {
		return err
	}
	if addr := os.Getenv("TEMPORAL_ADDRESS"); addr != "" {
		shared.address = addr
		return nil
	}
	shared.temporal, err = devstack.StartTemporal(ctx, devstack.TemporalOptions{}, log)
	if err != nil {
		return err
	}
	shared.address = shared.temporal.FrontendHostPort()
	return nil
}

// Env is one test's slice of the stack.
type Env struct {
	T           testing.TB
	DatabaseURL string
	Store       *ledger.Store
	Client      client.Client
	Namespace   string
	TaskQueue   string
	Log         zerolog.Logger
	// Version is the Worker Deployment version StartWorker's workers poll
	// as: a deployment of the test's own (one per task queue: the server's
	// current version is per deployment), the build of this test binary.
	Version devstack.WorkerVersion

	mu      sync.Mutex
	current bool // Version is current
	// nexusToken is the API token of the fleetsims' Nexus external API,
	// in nexusTokenFile ("": none made yet).
	nexusToken, nexusTokenFile string
}

// New gives the test a fresh migrated database, a Temporal client and a
// task queue of its own. It fails the test if the stack cannot start.
func New(t testing.TB) *Env {
	t.Helper()
	shared.once.Do(func() { shared.err = start() })
	if shared.err != nil {
		t.Fatalf("testenv: %v", shared.err)
	}
	return newEnv(t, Namespace)
}

func newEnv(t testing.TB, namespace string) *Env {
	t.Helper()
	ctx := context.Background()
	name := "fs_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16]
	url, err := devstack.CreateDatabase(ctx, shared.pg.URL, name)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { _ = devstack.DropDatabase(context.Background(), shared.pg.URL, name) })
	store, err := ledger.Open(ctx, url)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { _ = store.Close() })
	if _, err := store.Migrate(ctx); err != nil {
		t.Fatalf("testenv: migrate: %v", err)
	}
	log, _ := logging.New(zerolog.NewTestWriter(t), envOr("FLEETSAGA_TEST_LOG_LEVEL", "warn"), logging.FormatJSON)
	c, err := client.Dial(client.Options{HostPort: shared.address, Namespace: namespace, Logger: logging.Temporal(log)})
	if err != nil {
		t.Fatalf("testenv: dial Temporal at %s: %v", shared.address, err)
	}
	namespaces.Store(c, namespace)
	t.Cleanup(func() { namespaces.Delete(c); c.Close() })
	queue := "test-" + uuid.NewString()[:8]
	t.Cleanup(func() { terminateOpen(t, c, queue) })
	return &Env{T: t, DatabaseURL: url, Store: store, Client: c, Namespace: namespace, TaskQueue: queue, Log: log,
		Version: devstack.WorkerVersion{Deployment: devstack.DeploymentFor(queue), BuildID: buildid.Self()}}
}

// Parallel marks the test parallel and gives it the stack in a Temporal
// namespace of its own: fleetsaga's workflow IDs name their targets, so
// two tests updating the same SP in one namespace would collide. For
// tests that wait rather than compute (bakes, windows, simulated
// devices); `go test -parallel` bounds how many run at once.
func Parallel(t *testing.T) *Env {
	t.Helper()
	t.Parallel()
	shared.once.Do(func() { shared.err = start() })
	if shared.err != nil {
		t.Fatalf("testenv: %v", shared.err)
	}
	name := "fs-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	c, err := client.Dial(client.Options{HostPort: shared.address, Namespace: Namespace, Logger: logging.Temporal(zerolog.Nop())})
	if err != nil {
		t.Fatalf("testenv: dial Temporal at %s: %v", shared.address, err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), registerTimeout)
	defer cancel()
	if err := devstack.RegisterNamespace(ctx, c, name); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return newEnv(t, name)
}

// registerTimeout bounds registering a test's namespace and its search
// attributes (milliseconds on an idle dev server; a loaded one is slower).
const registerTimeout = time.Minute

// Namespace is the Temporal namespace of New's tests (the dev server's).
const Namespace = "default"

// namespaces maps each client testenv dialled to its namespace, for the
// frontend calls the SDK client does not wrap (reset, the activity
// tools). A map rather than a wrapper: the SDK's worker accepts only the
// client it made.
var namespaces sync.Map

// namespaceOf is the namespace c was dialled on by testenv.
func namespaceOf(c client.Client) string {
	if n, ok := namespaces.Load(c); ok {
		return n.(string)
	}
	return Namespace
}

// CLIEnv is the environment the starter (or a worker) run by the test
// needs to reach its stack.
func (e *Env) CLIEnv() []string {
	return []string{"TEMPORAL_ADDRESS=" + shared.address, "TEMPORAL_NAMESPACE=" + e.Namespace,
		"DATABASE_URL=" + e.DatabaseURL, "FLEETSAGA_TASK_QUEUE=" + e.TaskQueue}
}

// TemporalAddress is the dev server's frontend address.
func (e *Env) TemporalAddress() string { return shared.address }

// StartFleetsim serves a simulated fleet for this test; its Nexus instances
// use the test's database.
func (e *Env) StartFleetsim(s *spec.Spec) *fleetsim.Server {
	e.T.Helper()
	srv, err := fleetsim.Start(context.Background(), fleetsim.Env{
		Spec: s, DatabaseURL: e.DatabaseURL, Log: e.Log.With().Str("component", "fleetsim").Logger(),
		Check: contractCheck(e.T), NexusToken: e.NexusToken(),
	}, "127.0.0.1:0")
	if err != nil {
		e.T.Fatalf("testenv: start fleetsim: %v", err)
	}
	e.T.Cleanup(func() { _ = srv.Close() })
	return srv
}

// Endpoints points the fleet clients at a fleetsim (its Nexus external
// API's token in NexusTokenFile).
func (e *Env) Endpoints(sim *fleetsim.Server) fleet.Endpoints {
	ep := fleet.FromFleetsim(sim.URL, e.DatabaseURL)
	ep.NexusExternalTokenFile = e.NexusTokenFile()
	return ep
}

// NexusToken is the API token the test's fleetsims' Nexus external API
// accepts: random per test, written to NexusTokenFile for the worker.
func (e *Env) NexusToken() string {
	e.T.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.nexusToken == "" {
		e.nexusToken = "oxide-token-" + strings.ReplaceAll(uuid.NewString(), "-", "")
		e.nexusTokenFile = filepath.Join(e.T.TempDir(), "nexus-token")
		if err := os.WriteFile(e.nexusTokenFile, []byte(e.nexusToken+"\n"), 0o600); err != nil {
			e.T.Fatalf("testenv: write the Nexus API token: %v", err)
		}
	}
	return e.nexusToken
}

// NexusTokenFile holds NexusToken (the worker's
// --nexus-external-token-file).
func (e *Env) NexusTokenFile() string {
	e.NexusToken()
	return e.nexusTokenFile
}

// StartWorker runs an in-process worker of e.Version on the test's task
// queue until the test ends (or stop is called), and returns once that
// version is current (a versioned worker gets no tasks before). Missing
// deps default to the test's ledger.
func (e *Env) StartWorker(d workerapp.Deps) (stop func()) {
	e.T.Helper()
	if d.Ledger == nil {
		d.Ledger = e.Store
	}
	if d.HTTP == nil {
		d.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	if d.Identity == "" {
		d.Identity = "test-worker-" + uuid.NewString()[:4]
	}
	if d.HealthCheckHosts == nil {
		d.HealthCheckHosts = []string{"127.0.0.1"} // the tests' monitors listen there
	}
	if d.ArtifactRoot == "" {
		d.ArtifactRoot = os.TempDir() // the tests write their artifacts in their temp dirs
	}
	d.Log = e.Log
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- workerapp.Run(ctx, e.Client, workerapp.Options{TaskQueue: e.TaskQueue, Identity: d.Identity, StopTimeout: time.Second,
			DeploymentName: e.Version.Deployment, BuildID: e.Version.BuildID}, d)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.T.Errorf("worker: %v", err)
			}
		})
	}
	e.T.Cleanup(stop)
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.current {
		if err := devstack.MakeCurrent(context.Background(), e.Client, e.Version); err != nil {
			e.T.Fatalf("testenv: %v", err)
		}
		e.current = true
	}
	return stop
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
