package ledger_test

// Heads the worker reads are checked with its key, heads name what they
// follow (schema/0017_audit_head_continuity.sql), and heads signed in the
// old format still verify.

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// A head signed before heads named what they follow (tag v1,
// prev_head_seq NULL) verifies, and the worker signs after it.
func TestAnOldFormatHeadStillVerifies(t *testing.T) {
	l := newSignedLedger(t)
	ctx := context.Background()
	a := intent("old-head", "sp/sled/11", 1)
	require.NoError(t, l.env.Store.RecordIntent(ctx, a))
	require.NoError(t, l.env.Store.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "intent", Worker: "w"}))
	var seq int64
	var hash string
	require.NoError(t, l.env.Store.DB().QueryRow(`SELECT seq, hash FROM update_event WHERE attempt_id = $1`, a.ID).Scan(&seq, &hash))
	pub, err := ssh.NewPublicKey(l.pub)
	require.NoError(t, err)
	chain := "attempt " + a.ID.String()
	sig := ed25519.Sign(l.key, ledger.HeadMessage("update_event", chain, seq, hash))
	_, err = l.env.Store.DB().Exec(`INSERT INTO audit_head (tbl, chain, head_seq, head_hash, key_fingerprint, signature) VALUES ('update_event', $1, $2, $3, $4, $5)`,
		chain, seq, hash, ssh.FingerprintSHA256(pub), base64.StdEncoding.EncodeToString(sig))
	require.NoError(t, err)
	_, err = l.verify(nil)
	require.NoError(t, err, "an old head verifies as it was signed")

	var alarms []*ledger.UnsignedAppend
	l.signing.OnUnsignedAppend(func(u *ledger.UnsignedAppend) { alarms = append(alarms, u) })
	require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "start", Worker: "w"}))
	require.Empty(t, alarms)
	v, err := l.verify(nil)
	require.NoError(t, err)
	require.Equal(t, 2, v.Heads)

	l.sql(t, fmt.Sprintf(`ALTER TABLE audit_head DISABLE TRIGGER audit_head_no_change;
UPDATE audit_head SET prev_head_seq = NULL WHERE chain = 'attempt %s' AND prev_head_seq IS NOT NULL;
ALTER TABLE audit_head ENABLE TRIGGER audit_head_no_change;`, a.ID))
	_, err = l.verify(nil)
	require.ErrorContains(t, err, "not signed by the worker's key", "a new head made to look old does not verify")
}

// The heads of a chain's first rows removed (the rows intact): the head
// after them names the head it followed, so verify names the chain.
func TestRemovedHeadsBeforeASignedOneAreNamed(t *testing.T) {
	l := newSignedLedger(t)
	ctx := context.Background()
	a := intent("gap-head", "sp/sled/12", 1)
	require.NoError(t, l.signing.RecordIntent(ctx, a))
	for _, step := range []string{"intent", "start", "wait"} {
		require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: step, Worker: "w"}))
	}
	_, err := l.verify(nil)
	require.NoError(t, err)
	l.sql(t, fmt.Sprintf(`ALTER TABLE audit_head DISABLE TRIGGER audit_head_no_change;
DELETE FROM audit_head WHERE chain = 'attempt %s' AND head_seq < (SELECT max(seq) FROM update_event WHERE attempt_id = '%[1]s');
ALTER TABLE audit_head ENABLE TRIGGER audit_head_no_change;`, a.ID))
	_, err = l.verify(nil)
	require.ErrorContains(t, err, "which today's ledger does not hold")
}

// The owner's row takes the place of the worker's next step and a head
// with the worker's fingerprint (not its signature) names it: the worker
// does not take it for its own, and says the head is a forgery.
func TestABogusHeadOnAPreemptingRowIsNamed(t *testing.T) {
	l := newSignedLedger(t)
	ctx := context.Background()
	a := intent("bogus-conflict", "sp/sled/13", 1)
	require.NoError(t, l.signing.RecordIntent(ctx, a))
	require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "intent", Worker: "w"}))
	pub, err := ssh.NewPublicKey(l.pub)
	require.NoError(t, err)
	l.sql(t, fmt.Sprintf(`INSERT INTO update_event (attempt_id, step, state, message, worker) VALUES ('%[1]s', 'finish', 'succeeded', 'SP updated', 'w');
INSERT INTO audit_head (tbl, chain, head_seq, head_hash, key_fingerprint, signature, prev_head_seq)
  SELECT 'update_event', 'attempt %[1]s', seq, hash, '%[2]s', 'AAAA', 0 FROM update_event WHERE attempt_id = '%[1]s' AND step = 'finish'`, a.ID, ssh.FingerprintSHA256(pub)))
	var alarms []*ledger.UnsignedAppend
	l.signing.OnUnsignedAppend(func(u *ledger.UnsignedAppend) { alarms = append(alarms, u) })
	require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "finish", State: "failed", Worker: "w"}))
	require.Len(t, alarms, 1)
	require.True(t, alarms[0].Bogus, alarms[0].Why)
}
