package approval_test

// Red team 2: attacks on the sealed-token and recorded-start paths of
// Keyring.Check, with the in-memory ledger (history) standing in for
// rows a database user wrote. Each test asserts the protection; a failing
// one is an attack that works.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
)

// A worker that trusts SSH keys only (no OIDC issuer, no token-sealing
// key). The operator mallory starts a rollout with a "sealed ID token"
// that is 4 bytes of garbage: its first run's VerifyStart refuses it
// (nothing in the ledger). A database user then INSERTs one
// rollout_approval row under "start:<original run ID>" with that exact
// payload, method "oidc" and a principal of their choice (carol), and
// mallory resets the run to before VerifyStart (a reset keeps the
// original run ID). recordedStart finds "its" row and returns it as the
// start, verifying nothing: not the token, not the issuer (there is
// none), not the row's principal. The start counts as carol's, so a
// four-eyes gate lets mallory approve her own rollout, and a worker's
// --approval-require-signed-start is met by an unsigned start.
func TestARecordedOIDCStartRowCountsWithoutAnyProof(t *testing.T) {
	k := keyring(t, map[string]ssh.Signer{"mallory": newKey(t)})
	start := approval.Gate{TemporalNamespace: "prod", Rollout: gate.Rollout, PlanDigest: gate.PlanDigest, Decision: approval.DecisionStart}
	st := approvaltestStatement(t, start)
	signed := approval.Signed{Payload: string(st.Payload()), SealedIDToken: "AAAA"} // no token at all
	h := &history{}

	_, _, _, err := k.Check(context.Background(), signed, start, approval.Policy{}, "", h)
	require.Error(t, err, "the first run: nothing to open, no issuer: refused")

	// What the database user INSERTs (gateHistory.Recorded reads these columns back).
	forged := approval.Verified{Principal: approval.Principal{Name: "oidc:https://idp.example#carol", ID: "oidc:https://idp.example#carol",
		Method: approval.MethodOIDC, KeyFingerprint: "https://idp.example#carol"}, Payload: signed.Payload, ReplayKey: "idtoken:forged"}
	h.record(start, forged)

	v, _, _, err := k.Check(context.Background(), signed, start, approval.Policy{}, "", h)
	require.Error(t, err, "the reset run's start counted as %s's on an INSERTed row alone (no token, no OIDC issuer configured)", v.Principal.Name)
}

func approvaltestStatement(t *testing.T, g approval.Gate) approval.Statement {
	t.Helper()
	return statement(t, g, now.Add(-time.Minute))
}

// alice approved a gate with a sealed ID token (5 minutes' life). Three
// days later the rollout is reset to before its gate, within the same
// pass (nothing spent). DEPLOYING ("Resets and approvals") says a
// recorded approval counts again only within --approval-max-age of its
// signing, and an OIDC one not at all ("its approver approves again").
// Anyone with the approve role who reads the history re-sends alice's
// approval as it was: Check finds its replay key recorded for this gate
// and takes the retry path, which checks neither the statement's age nor
// the token's expiry, so the sealed token in the history is usable, by
// someone else, long after it expired.
func TestAnExpiredSealedApprovalFromTheHistoryCountsAgainDaysLater(t *testing.T) {
	iss := approvaltest.StartIssuer(t)
	ts := approvaltest.NewTokenSealer(t)
	k, err := approval.LoadKeyring(approval.KeyringConfig{OIDCIssuer: iss.URL, OIDCAudience: "fleetsaga", AllowHTTPIssuer: true, TokenKeys: []string{ts.Key}})
	require.NoError(t, err)
	st := statement(t, gate, now)
	signed := ts.Seal(t, st, iss.Token(t, oidcClaims(iss, "alice", "a@example.com", st)))
	h := &history{}
	_, _, err = check(k.WithClock(func() time.Time { return now }), signed, approval.Policy{}, "", h)
	require.NoError(t, err)

	later := k.WithClock(func() time.Time { return now.Add(72 * time.Hour) })
	v, _, retry, err := later.Check(context.Background(), signed, gate, approval.Policy{}, "", h)
	require.Error(t, err, "a 3-day-old approval whose token expired 3 days ago counted again as %s's (retry %v), re-sent by a history reader", v.Principal.Name, retry)
}
