package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
)

// The starter signs with a key file, with the ssh-agent key a .pub names,
// or with the agent's only key; what it signs verifies against an
// allowed_signers file naming that key.
func TestStarterSignsWithAKeyFileOrSSHAgent(t *testing.T) {
	dir := t.TempDir()
	newKey := func(name string) (ed25519.PrivateKey, ssh.PublicKey) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		pub, err := ssh.NewPublicKey(priv.Public())
		require.NoError(t, err)
		block, err := ssh.MarshalPrivateKey(priv, "")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".pub"), ssh.MarshalAuthorizedKey(pub), 0o600))
		return priv, pub
	}
	alicePriv, alicePub := newKey("alice")
	bobPriv, bobPub := newKey("bob")
	enc, err := ssh.MarshalPrivateKeyWithPassphrase(alicePriv, "", []byte("pass"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "encrypted"), pem.EncodeToMemory(enc), 0o600))

	// An ssh-agent on a socket of the test's own.
	keyring := agent.NewKeyring()
	sock := filepath.Join(dir, "agent.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go agent.ServeAgent(keyring, c) //nolint:errcheck
		}
	}()
	t.Setenv("SSH_AUTH_SOCK", sock)

	st, err := approval.NewStatement("fleetsaga/rollout/plan/q3", "canary", strings.Repeat("ab", 32), approval.DecisionApprove, "ok", time.Now())
	require.NoError(t, err)
	signedBy := func(f signFlags) (string, error) {
		s, err := f.sign(t.Context(), st)
		if err != nil {
			return "", err
		}
		return approval.SignatureKey(s)
	}

	_, err = signedBy(signFlags{})
	require.ErrorIs(t, err, errNoSigner, "an empty agent: nothing to sign with")
	fp, err := signedBy(signFlags{key: filepath.Join(dir, "bob")})
	require.NoError(t, err)
	require.Equal(t, ssh.FingerprintSHA256(bobPub), fp, "a private key file")

	require.NoError(t, keyring.Add(agent.AddedKey{PrivateKey: alicePriv}))
	fp, err = signedBy(signFlags{})
	require.NoError(t, err)
	require.Equal(t, ssh.FingerprintSHA256(alicePub), fp, "the agent's only key")

	require.NoError(t, keyring.Add(agent.AddedKey{PrivateKey: bobPriv}))
	_, err = signedBy(signFlags{})
	require.ErrorContains(t, err, "choose one with --sign-key")
	fp, err = signedBy(signFlags{key: filepath.Join(dir, "bob.pub")})
	require.NoError(t, err)
	require.Equal(t, ssh.FingerprintSHA256(bobPub), fp, "the agent's key a .pub names")

	_, err = signedBy(signFlags{key: filepath.Join(dir, "encrypted")})
	require.ErrorContains(t, err, "is encrypted: load it into ssh-agent")

	// What the agent signed verifies as the allowed signer bob.
	s, err := signFlags{key: filepath.Join(dir, "bob.pub")}.sign(t.Context(), st)
	require.NoError(t, err)
	allowed := filepath.Join(dir, "allowed_signers")
	require.NoError(t, os.WriteFile(allowed, []byte("bob@example.com "+string(ssh.MarshalAuthorizedKey(bobPub))), 0o600))
	k, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: allowed})
	require.NoError(t, err)
	v, err := k.Verify(t.Context(), s, approval.Gate{Rollout: st.Rollout, Stage: st.Stage, PlanDigest: st.PlanDigest, Decision: approval.DecisionApprove})
	require.NoError(t, err)
	require.Equal(t, "ssh:bob@example.com", v.Principal.Name, "an SSH identity, in its namespace")

	token := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(token, []byte("a.b.c\n"), 0o600))
	_, err = signFlags{idToken: token}.sign(t.Context(), st)
	require.ErrorIs(t, err, errIDTokenFile, "a token from a file binds no approval")
	require.ErrorContains(t, err, "--id-token-command")
}

// The red team's OIDC replay: a token read from a file (or found in a
// log) approved whatever statement it was sent with. The starter now
// makes the statement first and asks the --id-token-command for a token
// bound to its digest, and seals it to the workers' key for that
// statement; it verifies for the statement, and the sealed token moved
// to another statement (another gate) is refused. Without the workers'
// public key the starter asks for no token: it could only send it in
// plain text, into the history.
func TestStarterGetsAnIDTokenBoundToTheStatement(t *testing.T) {
	iss := approvaltest.StartIssuer(t)
	ts := approvaltest.NewTokenSealer(t)
	iss.IssueAs(map[string]any{"iss": iss.URL, "aud": "fleetsaga", "sub": "u-123", "email": "dana@example.com", "email_verified": true,
		"iat": time.Now().Add(-time.Minute).Unix(), "exp": time.Now().Add(5 * time.Minute).Unix()})
	k, err := approval.LoadKeyring(approval.KeyringConfig{OIDCIssuer: iss.URL, OIDCAudience: "fleetsaga", TokenKeys: []string{ts.Key}, AllowHTTPIssuer: true})
	require.NoError(t, err)
	gate := approval.Gate{Rollout: "fleetsaga/rollout/plan/q3", Stage: "canary", PlanDigest: strings.Repeat("ab", 32), Decision: approval.DecisionApprove}
	st, err := approval.NewStatement(gate.Rollout, gate.Stage, gate.PlanDigest, gate.Decision, "ok", time.Now())
	require.NoError(t, err)

	_, err = signFlags{idTokenCmd: iss.TokenCommand()}.sign(t.Context(), st)
	require.ErrorContains(t, err, "--approval-token-public-key")
	require.Empty(t, iss.Issued(), "no token is asked for that could not be sealed")

	s, err := signFlags{idTokenCmd: iss.TokenCommand(), tokenPub: ts.Public}.sign(t.Context(), st)
	require.NoError(t, err)
	require.Empty(t, s.IDToken)
	require.NotContains(t, s.SealedIDToken, strings.Split(iss.Issued()[0], ".")[1], "the token is sealed")
	v, err := k.Verify(t.Context(), s, gate)
	require.NoError(t, err)
	require.Equal(t, approval.OIDCIdentity(iss.URL, "u-123"), v.Principal.ID)

	other := gate
	other.Rollout = "fleetsaga/rollout/plan/q4"
	st2, err := approval.NewStatement(other.Rollout, other.Stage, other.PlanDigest, other.Decision, "ok", time.Now())
	require.NoError(t, err)
	moved := approval.Signed{Payload: string(st2.Payload()), SealedIDToken: s.SealedIDToken}
	_, err = k.Verify(t.Context(), moved, other)
	var r *approval.Refusal
	require.ErrorAs(t, err, &r)
	require.Equal(t, approval.ReasonBadToken, r.Reason, "the token is sealed for the first statement")
	require.NotContains(t, err.Error(), s.SealedIDToken)

	_, err = signFlags{idTokenCmd: "echo secret-ish-output; exit 3", tokenPub: ts.Public}.sign(t.Context(), st)
	require.ErrorContains(t, err, "--id-token-command failed")
	require.NotContains(t, err.Error(), "secret-ish-output", "the command's stdout is never shown")
	_, err = signFlags{idTokenCmd: "echo not-a-jwt", tokenPub: ts.Public}.sign(t.Context(), st)
	require.ErrorContains(t, err, "printed no JWT")
	require.NotContains(t, err.Error(), "not-a-jwt")
}
