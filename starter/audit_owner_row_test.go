package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// With every flag DEPLOYING.md recommends, a row the owner appends with a
// plain INSERT exits 1, and still does after the worker's next append.
func TestAuditVerifyNamesAnOwnersRowAfterTheWorkersNextAppend(t *testing.T) {
	key, pub := headKey(t)
	o := newOwnerLedger(t, func(s *ledger.Store) *ledger.Store { return s.WithHeadSigner(key) })
	signerPub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	sp, err := ssh.NewPublicKey(signerPub)
	require.NoError(t, err)
	signers := filepath.Join(t.TempDir(), "allowed_signers")
	require.NoError(t, os.WriteFile(signers, append([]byte("alice "), ssh.MarshalAuthorizedKey(sp)...), 0o600))
	flags := []string{"audit", "verify", "--allowed-signers", signers, "--audit-public-key", pub, "--against", o.export}

	o.asOwner(t, fmt.Sprintf(`INSERT INTO update_event (attempt_id, step, message, worker) VALUES ('%s', 'rollback', 'none needed', 'w')`, o.attempts[0]))
	r := runStarter(t, o.db, flags...)
	require.Equal(t, exitFailed, r.code, "right after the INSERT: %s", r.stdout)

	require.NoError(t, o.env.Store.WithHeadSigner(key).AppendEvent(context.Background(), ledger.Event{AttemptID: o.attempts[0], Step: "post", Worker: "w"}))
	r = runStarter(t, o.db, flags...)
	require.Equal(t, exitFailed, r.code, "the owner's row is still in the chain: %s", r.stdout)
}
