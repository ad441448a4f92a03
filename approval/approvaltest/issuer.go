package approvaltest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/approval"
)

// Issuer is a real OIDC issuer over HTTP: discovery, a JWKS at JWKSURL,
// and tokens signed with RS256 under key ID "k1". The same JWKS serves
// the Temporal server's JWT key provider (its keySourceURIs).
type Issuer struct {
	*httptest.Server
	signer jose.Signer

	mu     sync.Mutex
	claims map[string]any // what /token issues, nil: it issues nothing
	issued []string       // every token /token issued, for tests that look for them
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
	// /token?nonce=N issues a token of the claims IssueAs set, bound to
	// nonce N, as an identity provider's login would for an authorization
	// request with that nonce: what `starter --id-token-command` runs.
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		iss.mu.Lock()
		claims := maps.Clone(iss.claims)
		iss.mu.Unlock()
		if claims == nil {
			http.Error(w, "no identity to issue for", http.StatusForbidden)
			return
		}
		if n := r.URL.Query().Get("nonce"); n != "" {
			claims["nonce"] = n
		}
		b, err := json.Marshal(claims)
		if err == nil {
			var obj *jose.JSONWebSignature
			if obj, err = iss.signer.Sign(b); err == nil {
				var tok string
				if tok, err = obj.CompactSerialize(); err == nil {
					iss.mu.Lock()
					iss.issued = append(iss.issued, tok)
					iss.mu.Unlock()
					_, _ = w.Write([]byte(tok + "\n"))
					return
				}
			}
		}
		http.Error(w, err.Error(), http.StatusInternalServerError)
	})
	iss.Server = httptest.NewServer(mux)
	t.Cleanup(iss.Close)
	return iss
}

// JWKSURL is where the issuer's public keys are.
func (iss *Issuer) JWKSURL() string { return iss.URL + "/jwks" }

// IssueAs makes /token issue tokens of claims (and the nonce asked for).
func (iss *Issuer) IssueAs(claims map[string]any) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.claims = maps.Clone(claims)
}

// Issued is every token /token issued so far.
func (iss *Issuer) Issued() []string {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	return slices.Clone(iss.issued)
}

// TokenCommand is a `starter --id-token-command` that logs in at this
// issuer: it asks /token for a token bound to the statement's digest.
func (iss *Issuer) TokenCommand() string {
	return `curl -sf "` + iss.URL + `/token?nonce=$` + approval.IDTokenNonceEnv + `"`
}

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
