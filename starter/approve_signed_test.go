package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// On a worker with a keyring, `starter approve` without a key is refused
// (exit 1, reason Unsigned) and approves nothing; a gate that needs two
// approvers stays closed after alice's signed approval, and starter
// status says who else it needs; bob's opens it. The ledger holds both
// principals, key fingerprints and signatures.
func TestSignedApproveOpensAGateThatNeedsTwo(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	env := testenv.New(t)
	dir := t.TempDir()
	alice, aliceKey := approvaltest.KeyFile(t, dir, "alice")
	bob, bobKey := approvaltest.KeyFile(t, dir, "bob")
	signers := approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice, "bob": bob})
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: signers})
	require.NoError(t, err)
	s, err := spec.Generate(spec.GenerateOptions{Servers: 2, Seed: 11, SpeedUp: 30})
	require.NoError(t, err)
	sim := env.StartFleetsim(s)
	env.StartWorker(workerapp.Deps{Fleet: env.Endpoints(sim), Keyring: keyring})
	// No ssh-agent and no key from the environment: only --sign-key signs.
	vars := []string{"TEMPORAL_ADDRESS=" + env.TemporalAddress(), "FLEETSAGA_TASK_QUEUE=" + env.TaskQueue, "SSH_AUTH_SOCK=", "FLEETSAGA_SIGN_KEY=",
		"DATABASE_URL=" + env.DatabaseURL}
	ctx, cancel := context.WithTimeout(context.Background(), approveTimeout)
	defer cancel()

	name := "signed-" + strings.TrimPrefix(env.TaskQueue, "test-")
	plan := filepath.Join(dir, "plan.yaml")
	require.NoError(t, os.WriteFile(plan, []byte(`name: `+name+`
stages:
- name: cmon
  kind: agent-install
  approval: {approvers: 2}
  concurrency: 1
  updates:
  - agents: [{name: cmon-agent}]
    selection: {all: true}
    pollInterval: 250ms
`), 0o644))
	id := rollout.RolloutWorkflowID(name)
	t.Cleanup(func() {
		for _, w := range []string{id, workflows.WorkflowID(workflows.KindAgentInstall, "dc/cmon-agent")} {
			_ = env.Client.TerminateWorkflow(context.Background(), w, "", "test over")
		}
	})
	r := runStarter(t, vars, "rollout", plan)
	require.Equal(t, exitOK, r.code, r.stderr)
	gate := gateShows(ctx, t, env, id, "cmon")
	require.Equal(t, "2 more approvals", gate.StillNeeded)

	r = runStarter(t, vars, "approve", id, "--by", "alice", "--reason", "cmon plan reviewed", "--plan-digest", gate.Digest)
	require.Equal(t, exitFailed, r.code, r.stderr)
	require.Contains(t, r.stderr, "approval refused (Unsigned)")
	approvals := func() []ledger.Approval {
		all, err := env.Store.Approvals(ctx, id)
		require.NoError(t, err)
		return all
	}
	require.Empty(t, approvals(), "a refused approval records nothing")

	r = runStarter(t, vars, "approve", id, "--by", "alice", "--reason", "cmon plan reviewed", "--plan-digest", gate.Digest, "--sign-key", aliceKey)
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runStarter(t, vars, "status", id)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "still needed: 1 more approval, not by ssh:alice (approved so far by ssh:alice)")

	r = runStarter(t, vars, "approve", id, "--by", "bob", "--reason", "cmon plan reviewed too", "--plan-digest", gate.Digest, "--sign-key", bobKey)
	require.Equal(t, exitOK, r.code, r.stderr)
	r = runStarter(t, vars, "watch", id)
	require.Equal(t, exitOK, r.code, r.stderr)

	got := approvals()
	require.Len(t, got, 2)
	for i, who := range []string{"alice", "bob"} {
		require.Equal(t, "ssh:"+who, got[i].Principal, "an SSH identity, in its namespace")
		require.Equal(t, gate.Digest, got[i].PlanDigest)
		require.Equal(t, "ssh", got[i].Method)
		require.Equal(t, ssh.FingerprintSHA256(map[string]ssh.Signer{"alice": alice, "bob": bob}[who].PublicKey()), got[i].KeyFingerprint)
		require.Contains(t, got[i].Signature, "BEGIN SSH SIGNATURE")
	}
	r = runStarter(t, vars, "audit", "verify", "--allowed-signers", signers)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "2 signatures verified")
	r = runStarter(t, vars, "status", id)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "approvals (ledger):")
	require.Contains(t, r.stdout, ": ssh:alice (ssh "+got[0].KeyFingerprint+`) "cmon plan reviewed"`)
	require.Contains(t, r.stdout, ": ssh:bob (ssh "+got[1].KeyFingerprint+`) "cmon plan reviewed too"`)
}
