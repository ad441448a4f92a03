package approval_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
)

// What `starter audit verify` re-checks of a stored approval, offline: an
// SSH row is its allowed signer's, as the principal it names, with the
// signed nonce as its replay key; an OIDC row keeps no token, so only its
// statement, principal and replay key's shape are checked; any other
// method has no proof at all.
func TestVerifyStoredChecksWhoSignedAndHow(t *testing.T) {
	alice, bob := newKey(t), newKey(t)
	signersFile := allowedSigners(t, map[string]ssh.Signer{"alice": alice, "bob": bob})
	st := statement(t, gate, now)
	signed := sign(t, st, alice)
	good := approval.Recorded{Method: approval.MethodSSH, Principal: "ssh:alice", KeyFingerprint: ssh.FingerprintSHA256(alice.PublicKey()),
		Signature: signed.SSHSig, Payload: signed.Payload, ReplayKey: st.Nonce}
	oidc := approval.Recorded{Method: approval.MethodOIDC, Principal: "oidc:https://idp.example#u-1", KeyFingerprint: "https://idp.example#u-1",
		Payload: signed.Payload, ReplayKey: "idtoken:0123"}
	people := approval.People{"ssh:alice": "alice-person", "oidc:https://idp.example#u-1": "alice-person"}
	for _, tc := range []struct {
		name   string
		edit   func(r *approval.Recorded)
		start  approval.Recorded
		people approval.People
		want   string // "" passes
	}{
		{"a genuine row", func(*approval.Recorded) {}, good, nil, ""},
		{"a bare principal from before identities", func(r *approval.Recorded) { r.Principal = "alice" }, good, nil, ""},
		{"a person of the people file", func(r *approval.Recorded) { r.Principal = "alice-person" }, good, people, ""},
		{"another signer's principal", func(r *approval.Recorded) { r.Principal = "ssh:bob" }, good, nil, `recorded as principal "ssh:bob"`},
		{"a person the people file does not give the key", func(r *approval.Recorded) { r.Principal = "bob-person" }, good, people, `recorded as principal "bob-person"`},
		{"a replay key not the nonce", func(r *approval.Recorded) { r.ReplayKey = "other" }, good, nil, "is not the signed statement's nonce"},
		{"an unknown method", func(r *approval.Recorded) { r.Method = "hmac" }, good, nil, `method "hmac" has no signature to verify`},
		{"an OIDC row", func(*approval.Recorded) {}, oidc, nil, ""},
		{"an OIDC row of a person", func(r *approval.Recorded) { r.Principal = "alice-person" }, oidc, people, ""},
		{"an OIDC row of another subject", func(r *approval.Recorded) { r.Principal = "oidc:https://idp.example#u-2" }, oidc, nil, "but the token was oidc:https://idp.example#u-1's"},
		{"an OIDC row with an SSH principal", func(r *approval.Recorded) { r.Principal = "ssh:alice" }, oidc, nil, "but the token was"},
		{"an OIDC row whose replay key is no token's", func(r *approval.Recorded) { r.ReplayKey = st.Nonce }, oidc, nil, "is not an ID token's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.start
			tc.edit(&r)
			err := approval.VerifyStored(signersFile, tc.people, r, gate)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func allowedSigners(t *testing.T, keys map[string]ssh.Signer) approval.AllowedSigners {
	t.Helper()
	var b []byte
	for p, k := range keys {
		b = append(b, []byte(p+" ")...)
		b = append(b, ssh.MarshalAuthorizedKey(k.PublicKey())...)
	}
	s, err := approval.ParseAllowedSigners(b)
	require.NoError(t, err)
	return s
}
