package approval_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
)

// oidcClaims are a live token's claims at iss for subject sub, bound to st.
func oidcClaims(iss *approvaltest.Issuer, sub, email string, st approval.Statement) map[string]any {
	return map[string]any{"iss": iss.URL, "aud": "fleetsaga", "sub": sub, "email": email, "email_verified": true,
		"iat": now.Add(-time.Minute).Unix(), "exp": now.Add(5 * time.Minute).Unix(), "nonce": approval.StatementDigest(st)}
}

// The red team's replay: a token that approved one gate, with a trailing
// newline added (go-jose strips it, the raw bytes differ), sent for
// another rollout's gate. Bound to its statement, it approves nothing
// else; and its replay key comes from what verified, so the re-encoded
// token is the same token.
func TestAnIDTokenWithATrailingNewlineIsTheSameToken(t *testing.T) {
	iss := approvaltest.StartIssuer(t)
	ts := approvaltest.NewTokenSealer(t)
	k, err := approval.LoadKeyring(approval.KeyringConfig{OIDCIssuer: iss.URL, OIDCAudience: "fleetsaga", TokenKeys: []string{ts.Key}, AllowHTTPIssuer: true})
	require.NoError(t, err)
	k = k.WithClock(func() time.Time { return now })
	st := statement(t, gate, now)
	tok := iss.Token(t, oidcClaims(iss, "u-123", "dana@example.com", st))
	h := &history{}
	v, _, err := check(k, ts.Seal(t, st, tok), approval.Policy{}, "", h)
	require.NoError(t, err)

	again, err := k.Verify(t.Context(), ts.Seal(t, st, tok+"\n"), gate)
	require.NoError(t, err, "go-jose accepts the re-encoded token")
	require.Equal(t, v.ReplayKey, again.ReplayKey, "one token, one replay key")

	otherGate := gate
	otherGate.Rollout = "fleetsaga/rollout/plan/other"
	elsewhere := statement(t, otherGate, now)
	_, _, _, err = k.Check(t.Context(), ts.Seal(t, elsewhere, tok+"\n"), otherGate, approval.Policy{}, "", h)
	requireRefused(t, err, approval.ReasonWrongGate)

	// Recorded at another stage, the re-encoded token is a replay.
	h.used[v.ReplayKey] = approval.Use{Rollout: gate.Rollout, Stage: "rest", Principal: v.Principal.Name}
	_, _, err = check(k, ts.Seal(t, st, tok+"\n"), approval.Policy{}, "", h)
	requireRefused(t, err, approval.ReasonReplayed)

	withJTI := func(jti string) approval.Verified {
		s := statement(t, gate, now)
		c := oidcClaims(iss, "u-123", "dana@example.com", s)
		c["jti"] = jti
		v, err := k.Verify(t.Context(), ts.Seal(t, s, iss.Token(t, c)), gate)
		require.NoError(t, err)
		return v
	}
	require.Equal(t, withJTI("j-1").ReplayKey, withJTI("j-1").ReplayKey, "a jti names the token")
	require.NotEqual(t, withJTI("j-1").ReplayKey, withJTI("j-2").ReplayKey)
}

// Four eyes and distinct approvers compare persons: with SSH keys and an
// issuer both trusted, only the people file says which identities are one
// person, and an identity it does not name fails closed.
func TestFourEyesComparesPersonsNotNames(t *testing.T) {
	iss := approvaltest.StartIssuer(t)
	ts := approvaltest.NewTokenSealer(t)
	alice, bob := newKey(t), newKey(t)
	people := filepath.Join(t.TempDir(), "people")
	require.NoError(t, os.WriteFile(people, []byte("# who is who\nalice ssh:alice oidc:"+iss.URL+"#u-alice\nbob ssh:bob\n"), 0o600))
	load := func(people string) *approval.Keyring {
		k, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice, "bob": bob}),
			OIDCIssuer: iss.URL, OIDCAudience: "fleetsaga", TokenKeys: []string{ts.Key}, AllowHTTPIssuer: true, People: people})
		require.NoError(t, err)
		return k.WithClock(func() time.Time { return now })
	}
	k := load(people)
	byOIDC := func(sub, email string) approval.Signed {
		st := statement(t, gate, now)
		return ts.Seal(t, st, iss.Token(t, oidcClaims(iss, sub, email, st)))
	}
	fourEyes := approval.Policy{FourEyes: true}
	two := approval.Policy{Approvers: 2}

	v, _, err := check(k, sign(t, statement(t, gate, now), alice), approval.Policy{}, "", nil)
	require.NoError(t, err)
	require.Equal(t, approval.Principal{Name: "alice", ID: "ssh:alice", Method: approval.MethodSSH, KeyFingerprint: ssh.FingerprintSHA256(alice.PublicKey())}, v.Principal)

	// alice started the rollout with her key; her OIDC account is her too.
	_, _, err = check(k, byOIDC("u-alice", "alice@example.com"), fourEyes, "alice", nil)
	requireRefused(t, err, approval.ReasonFourEyes)
	// alice approved with her key; her OIDC account is not a second approver.
	_, _, err = check(k, byOIDC("u-alice", "alice@example.com"), two, "", &history{sofar: []string{"alice"}})
	requireRefused(t, err, approval.ReasonAlreadyApproved)
	// mallory's account claims alice's name: its email counts for nothing,
	// and an identity the people file does not name is no one four eyes
	// can tell apart.
	_, _, err = check(k, byOIDC("u-mallory", "alice"), fourEyes, "bob", nil)
	requireRefused(t, err, approval.ReasonUnknownPerson)
	_, _, err = check(k, byOIDC("u-mallory", "alice"), approval.Policy{Allowed: []string{"alice"}}, "", nil)
	requireRefused(t, err, approval.ReasonNotAllowed)
	// A starter the people file does not name is unknown.
	_, _, err = check(k, sign(t, statement(t, gate, now), bob), fourEyes, "oidc:"+iss.URL+"#u-mallory", nil)
	requireRefused(t, err, approval.ReasonUnknownPerson)
	// bob is someone else.
	_, needed, err := check(k, sign(t, statement(t, gate, now), bob), fourEyes, "alice", nil)
	require.NoError(t, err)
	require.True(t, needed.Open())
	_, _, err = check(k, byOIDC("u-alice", "alice@example.com"), approval.Policy{Allowed: []string{"alice"}}, "", nil)
	require.NoError(t, err, "the people file's name admits each of alice's identities")

	// Both kinds of signer and no people file: no one can tell who is who.
	_, _, err = check(load(""), sign(t, statement(t, gate, now), bob), fourEyes, "ssh:alice", nil)
	requireRefused(t, err, approval.ReasonUnknownPerson)
	_, _, err = check(load(""), sign(t, statement(t, gate, now), bob), approval.Policy{}, "", nil)
	require.NoError(t, err, "a gate that compares no one needs no people file")

	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("# nobody\n"), 0o600))
	_, err = approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice}), People: empty})
	require.ErrorContains(t, err, "names no one")
	for _, bad := range []string{"ssh:alice ssh:alice\n", "alice alice\n", "alice ssh:a\nbob ssh:a\n", "alice oidc:https://idp\n"} {
		_, err := approval.ParsePeople([]byte(bad))
		require.Error(t, err, "%q", bad)
	}
}

// SamePerson resolves what a rollout recorded (its starter, an approver)
// through the current people file: an identity, a person, or a bare
// principal from the build before identities, which is an SSH principal;
// a bare email-shaped one may have been an OIDC email and cannot be told
// apart from any OIDC identity.
func TestSamePersonReadsRecordedPrincipalsThroughTheCurrentPeopleFile(t *testing.T) {
	alice, bob := newKey(t), newKey(t)
	signers := approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice, "bob": bob, "carol@example.com": newKey(t)})
	bare, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: signers})
	require.NoError(t, err)
	people := filepath.Join(t.TempDir(), "people")
	require.NoError(t, os.WriteFile(people, []byte("alice ssh:alice oidc:https://idp#u-alice\nbob ssh:bob\n"), 0o600))
	mapped, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: signers, People: people})
	require.NoError(t, err)
	sshAlice := approval.Principal{Name: "ssh:alice", ID: "ssh:alice", Method: approval.MethodSSH}
	sshBob := approval.Principal{Name: "ssh:bob", ID: "ssh:bob", Method: approval.MethodSSH}
	oidcDana := approval.Principal{Name: "oidc:https://idp#u-dana", ID: "oidc:https://idp#u-dana", Method: approval.MethodOIDC}
	aliceNow := approval.Principal{Name: "alice", ID: "oidc:https://idp#u-alice", Method: approval.MethodOIDC}
	for _, tc := range []struct {
		name        string
		k           *approval.Keyring
		recorded    string
		who         approval.Principal
		same, known bool
	}{
		{"a legacy bare principal is its SSH identity", bare, "alice", sshAlice, true, true},
		{"an identity is itself", bare, "ssh:alice", sshAlice, true, true},
		{"someone else", bare, "alice", sshBob, false, true},
		{"a legacy email-shaped principal against an SSH identity", bare, "carol@example.com", sshBob, false, true},
		{"a legacy email-shaped principal against an OIDC identity", bare, "carol@example.com", oidcDana, false, false},
		{"nothing recorded", bare, "", sshAlice, false, false},
		{"a recorded identity, through a people file that came later", mapped, "ssh:alice", aliceNow, true, true},
		{"a legacy principal, through a people file that came later", mapped, "alice", aliceNow, true, true},
		{"a person the people file names", mapped, "bob", approval.Principal{Name: "bob", ID: "ssh:bob", Method: approval.MethodSSH}, true, true},
		{"an identity the people file does not name", mapped, "oidc:https://idp#u-mallory", aliceNow, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			same, known := tc.k.SamePerson(tc.recorded, tc.who)
			require.Equal(t, tc.known, known, "known")
			require.Equal(t, tc.same, same, "same")
		})
	}
}

// An issuer reached over plain http hands out keys anyone on the path can
// replace: refused unless the development override says otherwise.
func TestAnHTTPIssuerNeedsTheDevelopmentOverride(t *testing.T) {
	_, err := approval.LoadKeyring(approval.KeyringConfig{OIDCIssuer: "http://idp.example", OIDCAudience: "fleetsaga"})
	require.ErrorContains(t, err, "https://")
	_, err = approval.LoadKeyring(approval.KeyringConfig{OIDCIssuer: "http://idp.example", OIDCAudience: "fleetsaga", AllowHTTPIssuer: true})
	require.NoError(t, err)
}
