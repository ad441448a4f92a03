package approval_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
)

// The ledger is not a key: a recorded approval counts again only if it
// verifies again against the keyring. What a database user can write (a
// row with no signature, a principal or replay key changed, a statement
// for another gate, an OIDC row, which keeps no token) does not.
func TestARecordedApprovalCountsOnlyIfItVerifiesAgain(t *testing.T) {
	alice, mallory := newKey(t), newKey(t)
	k := keyring(t, map[string]ssh.Signer{"alice": alice})
	v, err := k.Verify(t.Context(), sign(t, statement(t, gate, now.Add(-time.Minute)), alice), gate)
	require.NoError(t, err)
	rec := approval.Recorded{Method: approval.MethodSSH, Principal: v.Principal.Name, KeyFingerprint: v.Principal.KeyFingerprint,
		Signature: v.Signature, Payload: v.Payload, ReplayKey: v.ReplayKey}
	who, err := k.WithClock(func() time.Time { return now.Add(10 * time.Minute) }).Reverify(rec, gate)
	require.NoError(t, err, "a genuine approval verifies again within the max age")
	require.Equal(t, "ssh:alice", who.Name)
	_, err = k.WithClock(func() time.Time { return now.Add(24 * time.Hour) }).Reverify(rec, gate)
	requireRefused(t, err, approval.ReasonExpired)
	otherRun := gate
	otherRun.Run = "run-2"
	_, err = k.Reverify(rec, otherRun)
	requireRefused(t, err, approval.ReasonWrongGate)

	malloryRec := rec
	malloryRec.Signature = sign(t, statement(t, gate, now), mallory).SSHSig
	otherGate := gate
	otherGate.Stage = "rest"
	for _, tc := range []struct {
		name string
		mod  func(*approval.Recorded)
		gate approval.Gate
		want approval.Reason
	}{
		{"an INSERTed unsigned row", func(r *approval.Recorded) { *r = approval.Recorded{Method: approval.MethodSSH, Principal: "ssh:alice"} }, gate, approval.ReasonMalformed},
		{"method unsigned", func(r *approval.Recorded) { r.Method = approval.MethodUnsigned }, gate, approval.ReasonUnsigned},
		{"an OIDC row", func(r *approval.Recorded) { r.Method = approval.MethodOIDC }, gate, approval.ReasonUnsigned},
		{"principal rewritten", func(r *approval.Recorded) { r.Principal = "ssh:bob" }, gate, approval.ReasonBadSignature},
		{"replay key rewritten", func(r *approval.Recorded) { r.ReplayKey = "fresh" }, gate, approval.ReasonMalformed},
		{"statement rewritten", func(r *approval.Recorded) { r.Payload = strings.Replace(r.Payload, "healthy", "on fire", 1) }, gate, approval.ReasonBadSignature},
		{"fingerprint rewritten", func(r *approval.Recorded) { r.KeyFingerprint = "SHA256:x" }, gate, approval.ReasonBadSignature},
		{"a key the keyring does not hold", func(r *approval.Recorded) { *r = malloryRec }, gate, approval.ReasonUnknownKey},
		{"counted at another gate", func(*approval.Recorded) {}, otherGate, approval.ReasonWrongGate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rec
			tc.mod(&r)
			_, err := k.Reverify(r, tc.gate)
			requireRefused(t, err, tc.want)
		})
	}
}
