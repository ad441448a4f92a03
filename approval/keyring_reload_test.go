package approval_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
)

// An administrator revokes bob's key by removing his line from the
// worker's allowed_signers file: the running keyring refuses his next
// approval without a restart, alice's still verifies, and a key added to
// the file verifies too. A file that no longer parses refuses everyone
// (not the keys it held before) until it is fixed.
func TestAKeyRemovedFromTheFileStopsVerifyingWithoutARestart(t *testing.T) {
	alice, bob, carol := newKey(t), newKey(t), newKey(t)
	path := approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice, "bob": bob})
	k, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: path})
	require.NoError(t, err)
	k = k.WithClock(func() time.Time { return now })
	verify := func(key ssh.Signer) error {
		_, _, err := check(k, sign(t, statement(t, gate, now), key), approval.Policy{}, "", &history{})
		return err
	}
	require.NoError(t, verify(bob))

	rewrite := func(keys map[string]ssh.Signer) {
		require.NoError(t, os.Rename(approvaltest.AllowedSigners(t, keys), path))
	}
	rewrite(map[string]ssh.Signer{"alice": alice})
	requireRefused(t, verify(bob), approval.ReasonUnknownKey)
	require.NoError(t, verify(alice))

	rewrite(map[string]ssh.Signer{"alice": alice, "carol": carol})
	require.NoError(t, verify(carol), "a key added to the file verifies")

	require.NoError(t, os.WriteFile(path, []byte("alice not-a-key\n"), 0o600))
	err = verify(alice)
	require.Error(t, err)
	var r *approval.Refusal
	require.NotErrorAs(t, err, &r, "a broken file is the worker's fault, retried until fixed, not the approver's refusal")
}
