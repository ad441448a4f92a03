package approvaltest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"
)

// Issuer is a real OIDC issuer over HTTP: discovery, a JWKS at JWKSURL,
// and tokens signed with RS256 under key ID "k1". The same JWKS serves
// the Temporal server's JWT key provider (its keySourceURIs).
type Issuer struct {
	*httptest.Server
	signer jose.Signer
}

// StartIssuer starts an issuer, stopped when the test ends.
func StartIssuer(t testing.TB) *Issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	require.NoError(t, err)
	iss := &Issuer{signer: signer}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": iss.URL, "jwks_uri": iss.JWKSURL(),
			"authorization_endpoint": iss.URL + "/auth", "token_endpoint": iss.URL + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	iss.Server = httptest.NewServer(mux)
	t.Cleanup(iss.Close)
	return iss
}

// JWKSURL is where the issuer's public keys are.
func (iss *Issuer) JWKSURL() string { return iss.URL + "/jwks" }

// Token is a compact JWT of claims, signed by the issuer.
func (iss *Issuer) Token(t testing.TB, claims map[string]any) string {
	t.Helper()
	b, err := json.Marshal(claims)
	require.NoError(t, err)
	obj, err := iss.signer.Sign(b)
	require.NoError(t, err)
	s, err := obj.CompactSerialize()
	require.NoError(t, err)
	return s
}
