package approval_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
)

func TestOIDCTokenFromARealIssuer(t *testing.T) {
	iss := approvaltest.StartIssuer(t)
	ts := approvaltest.NewTokenSealer(t)
	k, err := approval.LoadKeyring(approval.KeyringConfig{OIDCIssuer: iss.URL, OIDCAudience: "fleetsaga", TokenKeys: []string{ts.Key},
		OIDCGroups: []string{"sp-admins"}, AllowHTTPIssuer: true})
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

	bind := func(c map[string]any) { c["nonce"] = approval.StatementDigest(st) }
	bound := ts.Seal(t, st, iss.Token(t, claims(now.Add(5*time.Minute), bind)))
	v, needed, err := check(k, bound, policy, "", nil)
	require.NoError(t, err, "a token whose nonce is the statement's digest binds it")
	id := "oidc:" + iss.URL + "#u-123"
	require.Equal(t, approval.Principal{Name: id, ID: id, Groups: []string{"sp-admins"}, Method: approval.MethodOIDC,
		KeyFingerprint: iss.URL + "#u-123"}, v.Principal, "the issuer's subject, never the email claim")
	require.True(t, strings.HasPrefix(v.ReplayKey, "idtoken:"))
	require.True(t, needed.Open())
	also := func(mod func(map[string]any)) func(map[string]any) {
		return func(c map[string]any) { bind(c); mod(c) }
	}
	// The email names no one: an unverified one, another person's, is
	// still the issuer's subject u-123 approving.
	unverified := ts.Seal(t, st, iss.Token(t, claims(now.Add(5*time.Minute), also(func(c map[string]any) {
		c["email"], c["email_verified"] = "alice@example.com", false
	}))))
	v, _, err = check(k, unverified, policy, "", nil)
	require.NoError(t, err)
	require.Equal(t, id, v.Principal.Name)

	for _, tc := range []struct {
		name  string
		token string
		want  approval.Reason
	}{
		{"expired", iss.Token(t, claims(now.Add(-time.Minute), bind)), approval.ReasonTokenExpired},
		{"another audience", iss.Token(t, claims(now.Add(5*time.Minute), also(func(c map[string]any) { c["aud"] = "grafana" }))), approval.ReasonBadToken},
		{"another issuer", iss.Token(t, claims(now.Add(5*time.Minute), also(func(c map[string]any) { c["iss"] = "https://evil.example" }))), approval.ReasonBadToken},
		{"not in an allowed group", iss.Token(t, claims(now.Add(5*time.Minute), also(func(c map[string]any) { c["groups"] = []string{"devs"} }))), approval.ReasonUnknownKey},
		{"issued for another statement", iss.Token(t, claims(now.Add(5*time.Minute), func(c map[string]any) { c["nonce"] = "0000" })), approval.ReasonWrongGate},
		{"unbound: no nonce", iss.Token(t, claims(now.Add(5*time.Minute), nil)), approval.ReasonUnboundToken},
		{"issued to another client (azp)", iss.Token(t, claims(now.Add(5*time.Minute), also(func(c map[string]any) { c["azp"] = "grafana" }))), approval.ReasonBadToken},
		{"several audiences, no azp", iss.Token(t, claims(now.Add(5*time.Minute), also(func(c map[string]any) { c["aud"] = []string{"fleetsaga", "grafana"} }))), approval.ReasonBadToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := check(k, ts.Seal(t, st, tc.token), policy, "", nil)
			requireRefused(t, err, tc.want)
			require.NotContains(t, err.Error(), tc.token, "no token in an error")
		})
	}

	forged := ts.Seal(t, st, iss.Token(t, claims(now.Add(5*time.Minute), bind))+"x")
	_, _, err = check(k, forged, policy, "", nil)
	requireRefused(t, err, approval.ReasonBadToken)
}

// An identity provider whose ID tokens carry no jti (the claim is
// optional in OpenID Connect Core) issues dana two tokens in the same
// second: one bound to her approval of one rollout's gate, one bound to
// her approval of another rollout's gate (a script approving both). Each
// token is bound to its own statement, and each counts: the replay key
// holds the token's nonce (its statement's digest), so the second is no
// replay of the first, and no one who can predict iat can take the key.
func TestTwoTokensWithoutJTIIssuedInOneSecondAreTwoApprovals(t *testing.T) {
	iss := approvaltest.StartIssuer(t)
	ts := approvaltest.NewTokenSealer(t)
	k, err := approval.LoadKeyring(approval.KeyringConfig{OIDCIssuer: iss.URL, OIDCAudience: "fleetsaga", TokenKeys: []string{ts.Key}, AllowHTTPIssuer: true})
	require.NoError(t, err)
	k = k.WithClock(func() time.Time { return now })
	other := gate
	other.Rollout = "fleetsaga/rollout/plan/q4"
	used := map[string]approval.Use{} // one ledger, a gate's approvers each
	for _, g := range []approval.Gate{gate, other} {
		h := &history{used: used}
		st := statement(t, g, now)
		signed := ts.Seal(t, st, iss.Token(t, oidcClaims(iss, "u-dana", "dana@example.com", st)))
		v, _, retry, err := k.Check(context.Background(), signed, g, approval.Policy{}, "", h)
		require.NoError(t, err, "dana's approval of %s, with a token bound to it, counts", g.Rollout)
		require.False(t, retry)
		h.record(g, v)
	}
}
