package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/internal/logging"
)

// StackOptions say what to bring up.
type StackOptions struct {
	// Dir keeps state: the private PostgreSQL cluster, logs, Temporal's DB file.
	Dir string
	// BinDir holds the built worker and fleetsim binaries.
	BinDir string
	// UIPort for the Temporal Web UI (0 = none).
	UIPort int
	// FleetsimSpec starts fleetsim with this spec ("" = no fleetsim).
	FleetsimSpec string
	// Workers is how many worker processes to start (needs fleetsim or endpoints).
	Workers int
	// WorkerVersion is the Worker Deployment version of those workers;
	// empty: the deployment of fleetsaga's task queue and the build the
	// worker binary names (internal/buildid). The stack makes it current.
	WorkerVersion WorkerVersion
	// Temporal is TemporalDev (the CLI's dev server, the default) or
	// TemporalCluster (the real server on PostgreSQL).
	Temporal string
	// PersistTemporal keeps the dev server's history in a file in Dir, so
	// it survives a restart of the Temporal server within one run (chaos).
	// The cluster always keeps it, in PostgreSQL.
	PersistTemporal bool
	// Prometheus starts a Prometheus scraping fleetsim's device health, for
	// a rollout's health checks (needs FleetsimSpec).
	Prometheus bool
	// DemoSigner makes a demo operator's SSH key and an allowed_signers
	// file naming it (MakeDemoSigner): the workers refuse unsigned
	// approvals and verify signed ones against it, and commands run
	// against the stack sign with the key (FLEETSAGA_SIGN_KEY).
	DemoSigner bool
	// Database is the stack's own database on the server, dropped and
	// created afresh at every start: the simulated fleet starts fresh too,
	// and a ledger kept from an earlier run would disagree with it. Empty
	// uses the named server's database as it is (tests make their own).
	Database string
	// TemporalAuth turns on the cluster's authorization (TemporalCluster
	// only): the workers present TemporalAuth.WorkerToken, and a command
	// run against the stack must present its own token.
	TemporalAuth *TemporalAuth
	// ArtifactRoot is the only directory the workers read a plan's path:
	// artifacts from (empty: Dir's "artifacts", where the demo and chaos
	// write theirs; never the whole of Dir, which holds the keys).
	ArtifactRoot string
	// WorkerEnv is added to the workers' environment (e.g. their approval
	// keyring's FLEETSAGA_APPROVAL_* settings).
	WorkerEnv []string
}

// Stack is a running dev stack.
type Stack struct {
	opts        StackOptions
	log         zerolog.Logger
	PG          *Postgres
	DatabaseURL string
	Temporal    TemporalServer
	UIURL       string
	FleetsimURL string
	Fleetsim    *Proc
	// Signer is the demo operator's key, when DemoSigner asked for one.
	Signer *DemoSigner
	// PrometheusURL is set when the stack runs a Prometheus.
	PrometheusURL string
	Prometheus    *Proc
	Workers       []*Proc
	versions      []WorkerVersion // per worker
}

// Env is the environment a command run against the stack gets.
func (s *Stack) Env() []string {
	env := []string{
		"DATABASE_URL=" + s.DatabaseURL,
		"TEMPORAL_ADDRESS=" + s.Temporal.FrontendHostPort(),
	}
	if s.FleetsimURL != "" {
		env = append(env, "FLEETSIM_URL="+s.FleetsimURL, "NEXUS_DATABASE_URL="+s.DatabaseURL,
			"FLEETSAGA_NEXUS_EXTERNAL_TOKEN_FILE="+s.nexusTokenFile())
	}
	if s.UIURL != "" {
		env = append(env, "TEMPORAL_UI_URL="+s.UIURL)
	}
	if s.PrometheusURL != "" {
		env = append(env, "FLEETSAGA_PROMETHEUS_URL="+s.PrometheusURL)
	}
	if s.Signer != nil {
		env = append(env, "FLEETSAGA_APPROVAL_ALLOWED_SIGNERS="+s.Signer.AllowedSigners, "FLEETSAGA_SIGN_KEY="+s.Signer.Key)
	}
	return env
}

// StartStack brings everything up; on error it stops what it started.
func StartStack(ctx context.Context, o StackOptions, log zerolog.Logger) (_ *Stack, err error) {
	if o.WorkerVersion == (WorkerVersion{}) {
		o.WorkerVersion = defaultVersion(o.BinDir)
	}
	if o.UIPort != 0 {
		if err := CheckPortFree(o.UIPort, "Temporal Web UI"); err != nil {
			return nil, err
		}
	}
	s := &Stack{opts: o, log: log}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	if o.DemoSigner {
		ds, err := MakeDemoSigner(o.Dir)
		if err != nil {
			return nil, err
		}
		s.Signer = &ds
	}
	if s.PG, err = FindOrStartPostgres(ctx, filepath.Join(o.Dir, "pg"), log); err != nil {
		return nil, err
	}
	s.DatabaseURL = s.PG.URL
	if o.Database != "" {
		if err := DropDatabase(ctx, s.PG.URL, o.Database); err != nil {
			return nil, fmt.Errorf("drop the stack's old database %s: %w", o.Database, err)
		}
		if s.DatabaseURL, err = CreateDatabase(ctx, s.PG.URL, o.Database); err != nil {
			return nil, err
		}
	}
	if err := s.startTemporal(ctx); err != nil {
		return nil, err
	}
	if o.UIPort != 0 {
		s.UIURL = fmt.Sprintf("http://127.0.0.1:%d", o.UIPort)
	}
	log.Info().Str("address", s.Temporal.FrontendHostPort()).Str("ui", s.UIURL).Str("stack", s.temporalKind()).Msg("Temporal up")

	if o.FleetsimSpec != "" {
		s.Fleetsim, s.FleetsimURL, err = StartFleetsim(ctx, o.Dir, s.Env(), filepath.Join(o.BinDir, "fleetsim"),
			"--spec", o.FleetsimSpec, "--database-url", s.DatabaseURL, "--nexus-token-file", s.nexusTokenFile())
		if err != nil {
			return nil, err
		}
		log.Info().Str("url", s.FleetsimURL).Msg("fleetsim up")
		if o.Prometheus {
			if s.Prometheus, s.PrometheusURL, err = StartPrometheus(ctx, filepath.Join(o.Dir, "prometheus"),
				map[string]string{"fleetsim": s.FleetsimURL}); err != nil {
				return nil, err
			}
			log.Info().Str("url", s.PrometheusURL).Msg("Prometheus up, scraping fleetsim")
		}
	}
	for i := range o.Workers {
		s.versions = append(s.versions, o.WorkerVersion)
		w, err := s.startWorker(i)
		if err != nil {
			return nil, err
		}
		s.Workers = append(s.Workers, w)
	}
	if o.Workers > 0 {
		if err := s.makeCurrent(ctx, o.WorkerVersion); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// makeCurrent makes the workers' version current once they poll, so they
// get tasks as soon as the stack is up.
func (s *Stack) makeCurrent(ctx context.Context, v WorkerVersion) error {
	start := time.Now()
	c, err := client.DialContext(ctx, client.Options{HostPort: s.Temporal.FrontendHostPort(), Namespace: "default",
		Logger: logging.Temporal(s.log.Level(zerolog.WarnLevel)), Credentials: s.opts.TemporalAuth.credentials(),
		ConnectionOptions: client.ConnectionOptions{TLSDisabled: true}})
	if err != nil {
		return fmt.Errorf("dial Temporal: %w", err)
	}
	defer c.Close()
	if err := MakeCurrent(ctx, c, v); err != nil {
		return fmt.Errorf("%w (see %s)", err, filepath.Join(s.opts.Dir, "worker-0.log"))
	}
	s.log.Info().Str("deployment", v.Deployment).Str("build_id", v.BuildID).Dur("took", time.Since(start)).
		Msg("workers' version is current")
	return nil
}

func (s *Stack) startWorker(i int) (*Proc, error) {
	if err := os.MkdirAll(s.artifactRoot(), 0o755); err != nil { // the worker refuses a root that is not there
		return nil, err
	}
	args := append([]string{"--identity", fmt.Sprintf("worker-%d", i),
		"--metrics-listen", "127.0.0.1:0", "--log-format", "json", "--artifact-root", s.artifactRoot()}, s.versions[i].args()...)
	tokenArgs, tokenEnv, err := s.opts.TemporalAuth.writeWorkerToken(s.opts.Dir)
	if err != nil {
		return nil, err
	}
	return StartProc(filepath.Join(s.opts.Dir, fmt.Sprintf("worker-%d.log", i)), append(append(s.Env(), s.opts.WorkerEnv...), tokenEnv...),
		filepath.Join(s.opts.BinDir, "worker"), append(args, tokenArgs...)...)
}

// nexusTokenFile holds the API token of fleetsim's Nexus external API:
// fleetsim makes it, the workers read it.
func (s *Stack) nexusTokenFile() string {
	p, err := filepath.Abs(filepath.Join(s.opts.Dir, "fleetsim-nexus-token"))
	if err != nil {
		return filepath.Join(s.opts.Dir, "fleetsim-nexus-token")
	}
	return p
}

// artifactRoot is the workers' --artifact-root (StackOptions.ArtifactRoot).
func (s *Stack) artifactRoot() string {
	if s.opts.ArtifactRoot != "" {
		return s.opts.ArtifactRoot
	}
	return filepath.Join(s.opts.Dir, "artifacts")
}

// RestartWorker SIGKILLs worker i (if running) and starts it again.
func (s *Stack) RestartWorker(i int) error {
	_ = s.Workers[i].Kill()
	w, err := s.startWorker(i)
	if err != nil {
		return err
	}
	s.Workers[i] = w
	return nil
}

// Stop stops everything this stack started, workers first.
func (s *Stack) Stop() {
	for _, w := range s.Workers {
		_ = w.Terminate(25 * time.Second)
	}
	if s.Prometheus != nil {
		_ = s.Prometheus.Terminate(5 * time.Second)
	}
	if s.Fleetsim != nil {
		_ = s.Fleetsim.Terminate(5 * time.Second)
	}
	if s.Temporal != nil {
		_ = s.Temporal.Stop()
	}
	if s.PG != nil {
		if err := s.PG.Stop(); err != nil {
			s.log.Warn().Err(err).Msg("stop PostgreSQL")
		}
	}
}

// Proc is a child process with its output in a log file.
type Proc struct {
	Cmd  *exec.Cmd
	done chan error
}

// StartProc starts prog with args, extra env, output appended to logPath.
func StartProc(logPath string, env []string, prog string, args ...string) (*Proc, error) {
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(prog, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", prog, err)
	}
	p := &Proc{Cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); out.Close() }()
	return p, nil
}

// Kill SIGKILLs the process.
func (p *Proc) Kill() error {
	err := p.Cmd.Process.Kill()
	<-p.done
	p.done <- errors.New("killed")
	return err
}

// Terminate sends SIGTERM and waits up to grace before SIGKILL.
func (p *Proc) Terminate(grace time.Duration) error {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(grace):
		return p.Kill()
	}
}

// WaitHTTP waits until url answers 200 (a process just started), up to timeout.
func WaitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return last
}
