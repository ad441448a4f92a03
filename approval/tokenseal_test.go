package approval_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
)

// An ID token counts only sealed to one of the worker's token keys: in
// plain text it is refused (UnsealedToken, with no part of it in the
// refusal), and sealed to a key the worker does not hold it opens
// nothing (BadToken). During a rotation the worker holds the new key and
// the old one, and a token sealed to either verifies.
func TestAnIDTokenCountsOnlySealedToTheWorkersKey(t *testing.T) {
	iss := approvaltest.StartIssuer(t)
	current, old, stranger := approvaltest.NewTokenSealer(t), approvaltest.NewTokenSealer(t), approvaltest.NewTokenSealer(t)
	k, err := approval.LoadKeyring(approval.KeyringConfig{OIDCIssuer: iss.URL, OIDCAudience: "fleetsaga", AllowHTTPIssuer: true,
		TokenKeys: []string{current.Key, old.Key}})
	require.NoError(t, err)
	k = k.WithClock(func() time.Time { return now })
	st := statement(t, gate, now)
	tok := iss.Token(t, oidcClaims(iss, "u-123", "dana@example.com", st))

	_, err = k.Verify(t.Context(), approval.Signed{Payload: string(st.Payload()), IDToken: tok}, gate)
	requireRefused(t, err, approval.ReasonUnsealedToken)
	require.NotContains(t, err.Error(), tok[len(tok)-20:])

	sealed := stranger.Seal(t, st, tok)
	_, err = k.Verify(t.Context(), sealed, gate)
	requireRefused(t, err, approval.ReasonBadToken)
	require.NotContains(t, err.Error(), sealed.SealedIDToken[:20])

	for _, s := range []*approvaltest.TokenSealer{current, old} {
		v, err := k.Verify(t.Context(), s.Seal(t, st, tok), gate)
		require.NoError(t, err)
		require.Equal(t, approval.OIDCIdentity(iss.URL, "u-123"), v.Principal.ID)
	}
}
