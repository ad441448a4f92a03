package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// A worker without --audit-signing-key on a ledger whose chains are
// signed refuses to start (exit 2, naming the flag).
func TestWorkerWithoutTheKeyOnASignedLedgerRefusesToStart(t *testing.T) {
	env := testenv.New(t)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, env.Store.WithHeadSigner(key).RecordApproval(ctx, ledger.Approval{Rollout: "r", Stage: "canary", By: "bob", Reason: "ok", Method: ledger.MethodUnsigned}))

	cmd := exec.Command(buildWorker(t), "--database-url", env.DatabaseURL, "--address", "127.0.0.1:1")
	cmd.Env = append(os.Environ(), "FLEETSAGA_AUDIT_SIGNING_KEY=", "FLEETSAGA_DEPLOYMENT_NAME=", "FLEETSAGA_BUILD_ID=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 2, ee.ExitCode(), "a usage error naming the missing key, not a Temporal error: %s", stderr.String())
	require.Contains(t, stderr.String(), "--audit-signing-key")
}

// A worker whose key signed no head of a ledger that holds heads (the
// wrong key, or a rotated one) refuses to start, naming the flag that
// vouches for the chains as they are.
func TestWorkerWithAnotherKeyOnASignedLedgerRefusesToStart(t *testing.T) {
	env := testenv.New(t)
	_, fleetKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	require.NoError(t, env.Store.WithHeadSigner(fleetKey).RecordApproval(context.Background(), ledger.Approval{Rollout: "r", Stage: "canary", By: "bob", Reason: "ok", Method: ledger.MethodUnsigned}))
	_, otherKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(otherKey, "another worker")
	require.NoError(t, err)
	keyFile := filepath.Join(t.TempDir(), "audit_head")
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600))

	cmd := exec.Command(buildWorker(t), "--database-url", env.DatabaseURL, "--address", "127.0.0.1:1", "--audit-signing-key", keyFile)
	cmd.Env = append(os.Environ(), "FLEETSAGA_DEPLOYMENT_NAME=", "FLEETSAGA_BUILD_ID=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 2, ee.ExitCode(), stderr.String())
	require.Contains(t, stderr.String(), "--audit-sign-unheaded-chains")
}
