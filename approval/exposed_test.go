package approval_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
)

// A start with a raw ID token is in the history; anyone may seal that
// token with the workers' public key. Its refusal marks the statement
// exposed, so the sealed copy is refused as a replay.
func TestRawStartTokenSealedByAHistoryReaderIsReplayed(t *testing.T) {
	iss := approvaltest.StartIssuer(t)
	ts := approvaltest.NewTokenSealer(t)
	k, err := approval.LoadKeyring(approval.KeyringConfig{OIDCIssuer: iss.URL, OIDCAudience: "fleetsaga", AllowHTTPIssuer: true, TokenKeys: []string{ts.Key}})
	require.NoError(t, err)
	k = k.WithClock(func() time.Time { return now })
	start := approval.Gate{Rollout: gate.Rollout, PlanDigest: gate.PlanDigest, Decision: approval.DecisionStart}
	st := statement(t, start, now)
	tok := iss.Token(t, oidcClaims(iss, "victim", "v@example.com", st))
	h := &history{}

	// The victim's raw start: refused.
	_, _, _, err = k.Check(context.Background(), approval.Signed{Payload: string(st.Payload()), IDToken: tok}, start, approval.Policy{}, "", h)
	requireRefused(t, err, approval.ReasonUnsealedToken)

	// The viewer, with the history and the public key only.
	resealed := ts.Seal(t, st, tok)
	_, _, _, err = k.Check(context.Background(), resealed, start, approval.Policy{}, "", h)
	requireRefused(t, err, approval.ReasonReplayed)
}

// A reset re-runs VerifyStart days later, maybe after the token-sealing
// key its start was sealed to was rotated out: the start the ledger
// recorded for this run, with the same statement, still counts.
func TestResetVerifiesItsRecordedStartAfterTheTokenKeyRotatedOut(t *testing.T) {
	iss := approvaltest.StartIssuer(t)
	old, cur := approvaltest.NewTokenSealer(t), approvaltest.NewTokenSealer(t)
	cfg := approval.KeyringConfig{OIDCIssuer: iss.URL, OIDCAudience: "fleetsaga", AllowHTTPIssuer: true, TokenKeys: []string{old.Key}}
	k, err := approval.LoadKeyring(cfg)
	require.NoError(t, err)
	start := approval.Gate{Rollout: gate.Rollout, PlanDigest: gate.PlanDigest, Decision: approval.DecisionStart}
	st := statement(t, start, now)
	signed := old.Seal(t, st, iss.Token(t, oidcClaims(iss, "dana", "d@example.com", st)))
	h := &history{}
	v, _, retry, err := k.WithClock(func() time.Time { return now }).Check(context.Background(), signed, start, approval.Policy{}, "", h)
	require.NoError(t, err)
	require.False(t, retry)
	h.record(start, v)

	later := func() time.Time { return now.Add(48 * time.Hour) }
	// Old key kept: the reset run's VerifyStart is a retry and counts.
	cfg.TokenKeys = []string{cur.Key, old.Key}
	k2, err := approval.LoadKeyring(cfg)
	require.NoError(t, err)
	_, _, retry, err = k2.WithClock(later).Check(context.Background(), signed, start, approval.Policy{}, "", h)
	require.NoError(t, err)
	require.True(t, retry)
	// Old key dropped.
	cfg.TokenKeys = []string{cur.Key}
	k3, err := approval.LoadKeyring(cfg)
	require.NoError(t, err)
	v3, _, retry, err := k3.WithClock(later).Check(context.Background(), signed, start, approval.Policy{}, "", h)
	require.NoError(t, err, "a reset of a rollout started before the rotation must still verify its recorded start")
	require.True(t, retry)
	require.Equal(t, v.Principal, v3.Principal)
	// Where the ledger holds no such record (another run), the token must open, and does not.
	_, _, _, err = k3.WithClock(later).Check(context.Background(), signed, start, approval.Policy{}, "", &history{})
	requireRefused(t, err, approval.ReasonBadToken)
}

// The token-sealing key opens every sealed token in every history: one
// that group or others may read is refused, as ssh refuses such a key.
func TestWorldReadableTokenKeyIsRefused(t *testing.T) {
	ts := approvaltest.NewTokenSealer(t)
	require.NoError(t, os.Chmod(ts.Key, 0o644))
	_, err := approval.LoadKeyring(approval.KeyringConfig{OIDCIssuer: "https://idp.example", OIDCAudience: "fleetsaga", TokenKeys: []string{ts.Key}})
	require.ErrorContains(t, err, "too open")
}
