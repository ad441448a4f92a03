package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"golang.org/x/crypto/ssh"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// runWorker runs the worker binary to its exit (none is expected: every
// case here stops before Temporal, whose address answers nothing).
func runWorker(t *testing.T, args ...string) (code int, stderr string) {
	t.Helper()
	cmd := exec.Command(buildWorker(t), append([]string{"--address", "127.0.0.1:1"}, args...)...)
	cmd.Env = append(os.Environ(), "FLEETSAGA_AUDIT_SIGNING_KEY=", "FLEETSAGA_DEPLOYMENT_NAME=", "FLEETSAGA_BUILD_ID=", "FLEETSAGA_MIGRATE=")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, errb.String())
	return ee.ExitCode(), errb.String()
}

// A worker on the workers' role refuses a ledger older than its build, in
// one line that says who migrates it: with --migrate=false it does not
// try, and without it it does not start a migration it cannot finish.
func TestWorkerOnTheWorkerRoleRefusesAnOlderLedger(t *testing.T) {
	env := testenv.New(t)
	workerURL := env.WorkerRoleURL()
	_, err := env.Store.DB().Exec(`DELETE FROM schema_migration WHERE version = 16`) // as before 0016
	require.NoError(t, err)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--migrate=false"}, "ledger schema lacks migration 16 (0016_worker_role.sql), which this build needs: run `starter migrate` as the ledger's owner (role "},
		{nil, "may not migrate it: run `starter migrate` as the ledger's owner (role "},
	} {
		code, stderr := runWorker(t, append([]string{"--database-url", workerURL}, tc.args...)...)
		assert.Equal(t, 1, code, stderr)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		assert.Len(t, lines, 1, "one line: %q", stderr)
		assert.Contains(t, lines[0], tc.want)
		assert.True(t, strings.HasPrefix(lines[0], "worker: "), lines[0])
	}
	var n int
	require.NoError(t, env.Store.DB().QueryRow(`SELECT count(*) FROM schema_migration WHERE version = 16`).Scan(&n))
	assert.Zero(t, n, "the worker's role applied nothing")

	code, stderr := runWorker(t, "--database-url", workerURL)
	assert.Equal(t, 1, code)
	assert.NotContains(t, stderr, "permission denied", "refused before it tried")

	t.Setenv("FLEETSAGA_MIGRATE", "maybe")
	cmd := exec.Command(buildWorker(t), "--database-url", workerURL)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	var ee *exec.ExitError
	require.ErrorAs(t, cmd.Run(), &ee)
	assert.Equal(t, 2, ee.ExitCode(), errb.String())
	assert.Contains(t, errb.String(), `FLEETSAGA_MIGRATE="maybe": want true or false`)
}

// The production setup end to end: the owner migrates (testenv, as the
// server's superuser), the worker binary runs on a login role that holds
// only fleetsaga_worker, with --migrate=false and its audit signing key,
// updates an SP's firmware in fleetsim, and `starter audit verify` with
// the worker's public key passes.
func TestWorkerOnTheWorkerRoleUpdatesAnSPAndTheAuditVerifies(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim + the worker binary")
	}
	env := testenv.New(t)
	s := &spec.Spec{Seed: 21, SpeedUp: 100, Timings: spec.DefaultTimings()}
	s.Timings.FlashBytesPerSecond = 10 << 10
	s.Timings.SPResetTime = spec.Duration{Duration: 20 * time.Second}
	s.Racks = spec.GenerateRacks(4, 21)
	require.NoError(t, s.Validate())
	sim := env.StartFleetsim(s)

	dir := t.TempDir()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(key, "worker")
	require.NoError(t, err)
	keyFile := filepath.Join(dir, "audit_head")
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600))
	sshPub, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	pubFile := filepath.Join(dir, "audit_head.pub")
	require.NoError(t, os.WriteFile(pubFile, ssh.MarshalAuthorizedKey(sshPub), 0o644))
	artifacts := filepath.Join(dir, "artifacts")
	require.NoError(t, os.Mkdir(artifacts, 0o755))
	img := filepath.Join(artifacts, "sp-1.1.0.bin")
	sum, err := simmgs.WriteImageFile(img, simmgs.ImageHeader{Component: simmgs.CompSP, Version: "1.1.0"}, 256<<10)
	require.NoError(t, err)

	version := devstack.WorkerVersion{Deployment: env.Version.Deployment, BuildID: "worker-role-" + uuid.NewString()[:8]}
	cmd := exec.Command(buildWorker(t), "--migrate=false", "--database-url", env.WorkerRoleURL(),
		"--audit-signing-key", keyFile, "--artifact-root", artifacts, "--identity", "role-worker", "--metrics-listen", "",
		"--deployment-name", version.Deployment, "--build-id", version.BuildID)
	cmd.Env = append(os.Environ(), env.CLIEnv()...)
	cmd.Env = append(cmd.Env, "FLEETSIM_URL="+sim.URL, "NEXUS_DATABASE_URL="+env.DatabaseURL,
		"FLEETSAGA_NEXUS_EXTERNAL_TOKEN_FILE="+env.NexusTokenFile(), "FLEETSAGA_MIGRATE=", "FLEETSAGA_AUDIT_SIGNING_KEY=")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("worker log:\n%s", logs.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, devstack.MakeCurrent(ctx, env.Client, version))

	cubby := 2
	in := mgsupdate.SPFirmwareInput{
		SP:       mgsupdate.SPTarget{Type: fmgs.SpTypeSled, Slot: uint16(cubby), Serial: s.Racks[0].Sleds[cubby].Serial, Part: spec.GeneratedPart},
		Artifact: mgsupdate.Artifact{Version: "1.1.0", SHA256: sum, Path: img},
		Timing: mgsupdate.MGSTiming{PollInterval: 20 * time.Millisecond, ProgressTimeout: time.Second, TakeoverTimeout: time.Second,
			ResetRetryInterval: 300 * time.Millisecond, NewVersionTimeout: 10 * time.Second,
			AttemptDelay: 100 * time.Millisecond, MaxAttempts: 4, HeartbeatTimeout: 3 * time.Second},
		ExpectedActive: spec.GeneratedSPActive, ExpectedInactive: spec.GeneratedSPInactive,
	}
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.WorkflowID(workflows.KindSPFirmware, in.Target()) + "#" + uuid.NewString()[:8], TaskQueue: env.TaskQueue,
		TypedSearchAttributes: workflows.StartAttributes(workflows.KindSPFirmware, in.Target(), in.ArtifactVersion()),
	}, mgsupdate.SPFirmwareUpdate, in)
	require.NoError(t, err)
	var res mgsupdate.MGSUpdateResult
	require.NoError(t, run.Get(ctx, &res))
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	truth := sim.Truth()[simmgs.Name].(simmgs.Truth).Racks[0].SPs[cubby]
	assert.Equal(t, "1.1.0", truth.SP.Active.Version, "fleetsim's SP runs the new image")

	atts, err := env.Store.Attempts(ctx, run.GetID())
	require.NoError(t, err)
	require.Len(t, atts, 1)
	assert.Equal(t, ledger.StateCompleted, atts[0].State)
	events, err := env.Store.Events(ctx, atts[0].ID)
	require.NoError(t, err)
	require.NotEmpty(t, events)
	for _, e := range events {
		assert.Equal(t, "role-worker", e.Worker)
	}

	starter := filepath.Join(t.TempDir(), "starter")
	out, err := exec.Command("go", "build", "-o", starter, "../starter").CombinedOutput()
	require.NoError(t, err, string(out))
	verify := exec.Command(starter, "audit", "verify", "--skip-signatures", "--audit-public-key", pubFile)
	verify.Env = append(os.Environ(), "DATABASE_URL="+env.DatabaseURL)
	out, err = verify.CombinedOutput()
	require.NoError(t, err, "starter audit verify: %s", out)
	assert.Contains(t, string(out), fmt.Sprintf("hash chains intact: %d rows in 1 chains", len(events)))
	assert.Contains(t, string(out), "1 chain heads signed by the worker's key hold")
}
