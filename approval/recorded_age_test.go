package approval_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	gossh "golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
)

// A reset run verifies its start again hours later: a statement (or an
// ID token) this run's ledger recorded for this gate is its own, checked
// for age when first seen, so it counts again; the same statement or
// token not recorded, or recorded elsewhere, is refused as too old.
func TestARecordedStatementIsNotRefusedForItsAge(t *testing.T) {
	alice := newKey(t)
	iss := approvaltest.StartIssuer(t)
	ts := approvaltest.NewTokenSealer(t)
	k, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]gossh.Signer{"alice": alice}),
		OIDCIssuer: iss.URL, OIDCAudience: "fleetsaga", TokenKeys: []string{ts.Key}, AllowHTTPIssuer: true})
	require.NoError(t, err)
	st := statement(t, gate, now)
	bySSH := sign(t, st, alice)
	tok := ts.Seal(t, st, iss.Token(t, oidcClaims(iss, "u-123", "dana@example.com", st)))
	for _, s := range []approval.Signed{bySSH, tok} {
		h := &history{}
		v, _, err := check(k.WithClock(func() time.Time { return now }), s, approval.Policy{}, "", h)
		require.NoError(t, err)

		later := k.WithClock(func() time.Time { return now.Add(3 * time.Hour) })
		_, _, retry, err := later.Check(t.Context(), s, gate, approval.Policy{}, "", h)
		require.NoError(t, err, "recorded for this gate, it counts again")
		require.True(t, retry)

		_, _, err = check(later, s, approval.Policy{}, "", &history{})
		require.Error(t, err)
		var r *approval.Refusal
		require.ErrorAs(t, err, &r)
		require.Contains(t, []approval.Reason{approval.ReasonExpired, approval.ReasonTokenExpired}, r.Reason, "not recorded: too old")
		h.used[v.ReplayKey] = approval.Use{Rollout: gate.Rollout, Stage: "other", Principal: v.Principal.Name}
		_, _, err = check(later, s, approval.Policy{}, "", h)
		requireRefused(t, err, approval.ReasonReplayed)
	}
}
