package approval_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	gossh "golang.org/x/crypto/ssh"

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

// A reset re-runs VerifyStart days later, maybe after a token-sealing
// key rotation: the start the ledger recorded for this run counts again
// once the run's own sealed token opens and verifies as that row's (its
// expiry and age aside), so the worker keeps the old key while rollouts
// started under it may be reset. Once it is dropped, the row alone is not
// proof: the reset run's start is refused.
func TestResetVerifiesItsRecordedStartWhileTheOldTokenKeyIsKept(t *testing.T) {
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
	// Old key kept beside the new one: the reset run's VerifyStart, its
	// token expired two days ago, is a retry and counts.
	cfg.TokenKeys = []string{cur.Key, old.Key}
	k2, err := approval.LoadKeyring(cfg)
	require.NoError(t, err)
	v2, _, retry, err := k2.WithClock(later).Check(context.Background(), signed, start, approval.Policy{}, "", h)
	require.NoError(t, err, "a reset of a rollout started before the rotation verifies its recorded start with the old key kept")
	require.True(t, retry)
	require.Equal(t, v.Principal, v2.Principal)
	// Old key dropped: the token does not open, the row does not count alone.
	cfg.TokenKeys = []string{cur.Key}
	k3, err := approval.LoadKeyring(cfg)
	require.NoError(t, err)
	_, _, _, err = k3.WithClock(later).Check(context.Background(), signed, start, approval.Policy{}, "", h)
	requireRefused(t, err, approval.ReasonBadToken)
	_, _, _, err = k3.WithClock(later).Check(context.Background(), signed, start, approval.Policy{}, "", &history{})
	requireRefused(t, err, approval.ReasonBadToken)
}

// The row of a recorded OIDC start names its person and token: rewritten
// (another principal, another replay key), it is not the start the run's
// sealed token proves, and does not count.
func TestARewrittenRecordedOIDCStartDoesNotCount(t *testing.T) {
	iss := approvaltest.StartIssuer(t)
	ts := approvaltest.NewTokenSealer(t)
	k, err := approval.LoadKeyring(approval.KeyringConfig{OIDCIssuer: iss.URL, OIDCAudience: "fleetsaga", AllowHTTPIssuer: true, TokenKeys: []string{ts.Key}})
	require.NoError(t, err)
	k = k.WithClock(func() time.Time { return now.Add(time.Hour) })
	start := approval.Gate{Rollout: gate.Rollout, PlanDigest: gate.PlanDigest, Decision: approval.DecisionStart}
	st := statement(t, start, now)
	signed := ts.Seal(t, st, iss.Token(t, oidcClaims(iss, "dana", "d@example.com", st)))
	for name, rewrite := range map[string]func(*approval.Verified){
		"principal":  func(v *approval.Verified) { v.Principal.Name = approval.OIDCIdentity(iss.URL, "carol") },
		"identity":   func(v *approval.Verified) { v.Principal.KeyFingerprint = iss.URL + "#carol" },
		"replay key": func(v *approval.Verified) { v.ReplayKey = "idtoken:forged" },
	} {
		t.Run(name, func(t *testing.T) {
			v := approval.Verified{Principal: approval.Principal{Name: approval.OIDCIdentity(iss.URL, "dana"), ID: approval.OIDCIdentity(iss.URL, "dana"),
				Method: approval.MethodOIDC, KeyFingerprint: iss.URL + "#dana"}, Payload: signed.Payload}
			// What the worker would have recorded: its replay key is the token's.
			v0, err := k.WithClock(func() time.Time { return now }).Verify(context.Background(), signed, start)
			require.NoError(t, err)
			v.ReplayKey = v0.ReplayKey
			rewrite(&v)
			h := &history{}
			h.record(start, v)
			_, _, _, err = k.Check(context.Background(), signed, start, approval.Policy{}, "", h)
			requireRefused(t, err, approval.ReasonBadSignature)
		})
	}
}

// The token-sealing key opens every sealed token in every history: one
// that group or others may read is refused, as ssh refuses such a key.
func TestWorldReadableTokenKeyIsRefused(t *testing.T) {
	ts := approvaltest.NewTokenSealer(t)
	require.NoError(t, os.Chmod(ts.Key, 0o644))
	_, err := approval.LoadKeyring(approval.KeyringConfig{OIDCIssuer: "https://idp.example", OIDCAudience: "fleetsaga", TokenKeys: []string{ts.Key}})
	require.ErrorContains(t, err, "too open")
}

// An SSH start's reset run takes Check's retry path: the ledger's row
// must hold the very signature the run's input carries, just verified, as
// the same person; a row rewritten (another signature, another person)
// does not stand for it.
func TestARewrittenRecordedSSHStartDoesNotCount(t *testing.T) {
	mallory, carol := newKey(t), newKey(t)
	k := keyring(t, map[string]gossh.Signer{"mallory": mallory, "carol": carol})
	start := approval.Gate{Rollout: gate.Rollout, PlanDigest: gate.PlanDigest, Decision: approval.DecisionStart}
	st := statement(t, start, now)
	signed := sign(t, st, mallory)
	later := k.WithClock(func() time.Time { return now.Add(48 * time.Hour) })
	for name, rewrite := range map[string]func(*approval.Verified){
		"signature": func(v *approval.Verified) { v.Signature = sign(t, st, carol).SSHSig },
		"key":       func(v *approval.Verified) { v.Principal.KeyFingerprint = gossh.FingerprintSHA256(carol.PublicKey()) },
	} {
		t.Run(name, func(t *testing.T) {
			h := &history{}
			v, _, _, err := k.WithClock(func() time.Time { return now }).Check(context.Background(), signed, start, approval.Policy{}, "", h)
			require.NoError(t, err)
			h.record(start, v)
			_, _, retry, err := later.Check(context.Background(), signed, start, approval.Policy{}, "", h)
			require.NoError(t, err, "the row as recorded: the reset run's start counts")
			require.True(t, retry)
			rewrite(&h.recorded[0])
			_, _, _, err = later.Check(context.Background(), signed, start, approval.Policy{}, "", h)
			requireRefused(t, err, approval.ReasonBadSignature)
		})
	}
}
