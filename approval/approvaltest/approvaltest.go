// Package approvaltest makes operators' keys and signed approvals for
// tests: keys generated in the test, an allowed_signers file naming them.
package approvaltest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
)

// Key is a fresh ed25519 SSH key.
func Key(t testing.TB) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	s, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	return s
}

// KeyFile is a fresh ed25519 SSH key written as an unencrypted OpenSSH
// private key file in dir (what `starter --sign-key` reads).
func KeyFile(t testing.TB, dir, name string) (ssh.Signer, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(priv, name)
	require.NoError(t, err)
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(block), 0o600))
	s, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	return s, path
}

// AllowedSigners writes an allowed_signers file naming each principal's
// key for namespace fleetsaga, and returns its path.
func AllowedSigners(t testing.TB, keys map[string]ssh.Signer) string {
	t.Helper()
	var b strings.Builder
	for _, who := range slices.Sorted(maps.Keys(keys)) {
		fmt.Fprintf(&b, "%s namespaces=\"fleetsaga\" %s", who, ssh.MarshalAuthorizedKey(keys[who].PublicKey()))
	}
	path := filepath.Join(t.TempDir(), "allowed_signers")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	return path
}

// Statement is a statement for gate (its run and namespace too), signed at at.
func Statement(t testing.TB, g approval.Gate, reason string, at time.Time) approval.Statement {
	t.Helper()
	st, err := approval.NewStatement(g.Rollout, g.Stage, g.PlanDigest, g.Decision, reason, at)
	require.NoError(t, err)
	st.Run, st.TemporalNamespace = g.Run, g.TemporalNamespace
	return st
}

// Sign signs st with key.
func Sign(t testing.TB, st approval.Statement, key ssh.Signer) approval.Signed {
	t.Helper()
	s, err := approval.SignSSH(st, key)
	require.NoError(t, err)
	return s
}
