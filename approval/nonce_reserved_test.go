package approval_test

import (
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
)

// An SSH statement's nonce is its replay key in the ledger, where the
// exposed marks are keyed "exposed:<digest>" (approval.ExposedKey): an
// approver who chose such a nonce could stand in for another statement's
// chained mark, so the prefix is refused.
func TestAnSSHNonceInTheExposedKeysNamespaceIsRefused(t *testing.T) {
	alice := newKey(t)
	k := keyring(t, map[string]ssh.Signer{"alice": alice})
	st := statement(t, gate, now.Add(-time.Minute))
	st.Nonce = approval.ExposedKey("a start statement")
	_, err := k.Verify(t.Context(), sign(t, st, alice), gate)
	requireRefused(t, err, approval.ReasonMalformed)
}
