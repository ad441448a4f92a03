package approval_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/approval"
)

// issuer is a real OIDC issuer: discovery and JWKS over HTTP, tokens
// signed with RS256.
type issuer struct {
	*httptest.Server
	signer jose.Signer
}

func startIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	require.NoError(t, err)
	iss := &issuer{signer: signer}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": iss.URL, "jwks_uri": iss.URL + "/jwks",
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

func (iss *issuer) token(t *testing.T, claims map[string]any) string {
	t.Helper()
	b, err := json.Marshal(claims)
	require.NoError(t, err)
	obj, err := iss.signer.Sign(b)
	require.NoError(t, err)
	s, err := obj.CompactSerialize()
	require.NoError(t, err)
	return s
}

func TestOIDCTokenFromARealIssuer(t *testing.T) {
	iss := startIssuer(t)
	k, err := approval.LoadKeyring(approval.KeyringConfig{OIDCIssuer: iss.URL, OIDCAudience: "fleetsaga",
		OIDCGroups: []string{"sp-admins"}})
	require.NoError(t, err)
	k = k.WithClock(func() time.Time { return now })
	claims := func(exp time.Time, mod func(map[string]any)) map[string]any {
		c := map[string]any{"iss": iss.URL, "aud": "fleetsaga", "sub": "u-123", "email": "dana@example.com",
			"groups": []string{"sp-admins"}, "iat": now.Add(-time.Minute).Unix(), "exp": exp.Unix()}
		if mod != nil {
			mod(c)
		}
		return c
	}
	st := statement(t, gate, now)
	policy := approval.Policy{Allowed: []string{"group:sp-admins"}}

	ok := approval.WithIDToken(st, iss.token(t, claims(now.Add(5*time.Minute), nil)))
	v, needed, err := check(k, ok, policy, "", nil)
	require.NoError(t, err)
	require.Equal(t, approval.Principal{Name: "dana@example.com", Groups: []string{"sp-admins"}, Method: approval.MethodOIDC,
		KeyFingerprint: iss.URL + "#u-123"}, v.Principal)
	require.True(t, strings.HasPrefix(v.ReplayKey, "idtoken:"))
	require.True(t, needed.Open())

	bound := approval.WithIDToken(st, iss.token(t, claims(now.Add(5*time.Minute), func(c map[string]any) { c["nonce"] = approval.StatementDigest(st) })))
	_, _, err = check(k, bound, policy, "", nil)
	require.NoError(t, err, "a token whose nonce is the statement's digest binds it")

	for _, tc := range []struct {
		name  string
		token string
		want  approval.Reason
	}{
		{"expired", iss.token(t, claims(now.Add(-time.Minute), nil)), approval.ReasonTokenExpired},
		{"another audience", iss.token(t, claims(now.Add(5*time.Minute), func(c map[string]any) { c["aud"] = "grafana" })), approval.ReasonBadToken},
		{"another issuer", iss.token(t, claims(now.Add(5*time.Minute), func(c map[string]any) { c["iss"] = "https://evil.example" })), approval.ReasonBadToken},
		{"not in an allowed group", iss.token(t, claims(now.Add(5*time.Minute), func(c map[string]any) { c["groups"] = []string{"devs"} })), approval.ReasonUnknownKey},
		{"issued for another statement", iss.token(t, claims(now.Add(5*time.Minute), func(c map[string]any) { c["nonce"] = "0000" })), approval.ReasonWrongGate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := check(k, approval.WithIDToken(st, tc.token), policy, "", nil)
			requireRefused(t, err, tc.want)
			require.NotContains(t, err.Error(), tc.token, "no token in an error")
		})
	}

	forged := approval.WithIDToken(st, iss.token(t, claims(now.Add(5*time.Minute), nil))+"x")
	_, _, err = check(k, forged, policy, "", nil)
	requireRefused(t, err, approval.ReasonBadToken)
}
