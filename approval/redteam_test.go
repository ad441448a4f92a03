package approval_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
)

// An identity provider whose ID tokens carry no jti (the claim is
// optional in OpenID Connect Core) issues dana two tokens in the same
// second: one bound to her approval of one rollout's gate, one bound to
// her approval of another rollout's gate (a script approving both). Each
// token is bound to its own statement and verifies, but their replay key
// is made of issuer, subject, iat and exp only, so the second is refused
// as a replay of the first: a real approver cannot approve. (The same
// key also lets whoever can predict iat, a DB role inserting rows or an
// SSH signer choosing its statement's nonce, spend dana's future keys.)
func TestRedteamTwoTokensWithoutJTIIssuedInOneSecondAreTwoApprovals(t *testing.T) {
	iss := approvaltest.StartIssuer(t)
	k, err := approval.LoadKeyring(approval.KeyringConfig{OIDCIssuer: iss.URL, OIDCAudience: "fleetsaga", AllowHTTPIssuer: true})
	require.NoError(t, err)
	k = k.WithClock(func() time.Time { return now })
	other := gate
	other.Rollout = "fleetsaga/rollout/plan/q4"
	h := &history{}
	for _, g := range []approval.Gate{gate, other} {
		st := statement(t, g, now)
		signed := approval.WithIDToken(st, iss.Token(t, oidcClaims(iss, "u-dana", "dana@example.com", st)))
		v, _, retry, err := k.Check(context.Background(), signed, g, approval.Policy{}, "", h)
		require.NoError(t, err, "dana's approval of %s, with a token bound to it, counts", g.Rollout)
		require.False(t, retry)
		h.record(g, v)
	}
}
