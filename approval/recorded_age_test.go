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
// ID token) this run's ledger recorded for this start is its own, checked
// for age when first seen, so it counts again. An approval sent again
// (an activity retried after its write, the update a reset re-applies)
// counts again only within the max age of its recording, its token
// expired or not: hours later it is refused, as the same statement or
// token not recorded is, and one recorded elsewhere is a replay.
func TestARecordedStatementIsNotRefusedForItsAge(t *testing.T) {
	alice := newKey(t)
	iss := approvaltest.StartIssuer(t)
	ts := approvaltest.NewTokenSealer(t)
	k, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]gossh.Signer{"alice": alice}),
		OIDCIssuer: iss.URL, OIDCAudience: "fleetsaga", TokenKeys: []string{ts.Key}, AllowHTTPIssuer: true})
	require.NoError(t, err)
	start := approval.Gate{Rollout: gate.Rollout, PlanDigest: gate.PlanDigest, Decision: approval.DecisionStart}
	signedFor := func(g approval.Gate) []approval.Signed {
		st := statement(t, g, now)
		return []approval.Signed{sign(t, st, alice), ts.Seal(t, st, iss.Token(t, oidcClaims(iss, "u-123", "dana@example.com", st)))}
	}
	at := func(d time.Duration) *approval.Keyring { return k.WithClock(func() time.Time { return now.Add(d) }) }
	for _, g := range []approval.Gate{start, gate} {
		for _, s := range signedFor(g) {
			h := &history{}
			v, _, retry, err := at(0).Check(t.Context(), s, g, approval.Policy{}, "", h)
			require.NoError(t, err)
			require.False(t, retry)
			h.record(g, v)

			_, _, retry, err = at(20*time.Minute).Check(t.Context(), s, g, approval.Policy{}, "", h)
			require.NoError(t, err, "recorded for this gate 20 minutes ago (a token expired since), it counts again")
			require.True(t, retry)

			_, _, retry, err = at(3*time.Hour).Check(t.Context(), s, g, approval.Policy{}, "", h)
			if g.Decision == approval.DecisionStart {
				require.NoError(t, err, "this run's recorded start counts again hours later")
				require.True(t, retry)
			} else {
				requireRefused(t, err, approval.ReasonExpired)
			}

			_, _, _, err = at(3*time.Hour).Check(t.Context(), s, g, approval.Policy{}, "", &history{})
			var r *approval.Refusal
			require.ErrorAs(t, err, &r)
			require.Contains(t, []approval.Reason{approval.ReasonExpired, approval.ReasonTokenExpired}, r.Reason, "not recorded: too old")
			h.used[v.ReplayKey] = approval.Use{Rollout: g.Rollout, Stage: "other", Principal: v.Principal.Name}
			_, _, _, err = at(3*time.Hour).Check(t.Context(), s, g, approval.Policy{}, "", h)
			requireRefused(t, err, approval.ReasonReplayed)
		}
	}
}
