package approval_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
)

// An OIDC row's principal must be the token's identity or the person the
// people file maps it to: any other prefix, or none, fails.
func TestVerifyStoredOIDCPrincipalIsTheTokensIdentityOrItsPerson(t *testing.T) {
	alice := newKey(t)
	signers := allowedSigners(t, map[string]ssh.Signer{"alice": alice})
	st := statement(t, gate, now)
	signed := sign(t, st, alice)
	people := approval.People{"oidc:https://idp.example#u-1": "alice-person"}
	for _, p := range []string{"person:alice-person", "role:release-manager", ""} {
		t.Run(p, func(t *testing.T) {
			r := approval.Recorded{Method: approval.MethodOIDC, Principal: p, KeyFingerprint: "https://idp.example#u-1",
				Payload: signed.Payload, ReplayKey: "idtoken:forged"}
			require.Error(t, approval.VerifyStored(signers, people, r, gate), "principal %q is no identity and no person of the people file", p)
		})
	}
}
