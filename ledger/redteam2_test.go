package ledger_test

// Red team 2: the worker's own signer trusts audit_head rows it never
// checks. Each test asserts the protection; a failing one is an attack
// that works.

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// The worker signs a row only when the row before it is "the row this key
// signed last", which it reads from audit_head by key fingerprint
// (newestHead) without checking that head's signature. The owner rewrites
// an attempt written since the last export ("failed: sled did not come
// back" becomes "ok"), recomputes its hashes, deletes its heads and
// INSERTs one head row with the worker's fingerprint and a garbage
// signature naming the rewritten newest row. The worker's next append
// follows that row, so it signs, vouching for the rewrite; the owner then
// deletes the bogus head. audit verify --audit-public-key --against
// calls the ledger intact: the rows before the chain's first signed row
// need no head, and the earlier export does not hold the chain.
// (Without the bogus head the worker refuses to sign and verify names the
// chain: TestARewrittenChainWithItsHeadsDeletedIsNotSignedAgain.)
func TestABogusHeadRowMakesTheWorkerSignAnOwnersRewrite(t *testing.T) {
	l := newSignedLedger(t)
	ctx := context.Background()
	other := intent("rt2-before", "sp/sled/8", 1)
	require.NoError(t, l.signing.RecordIntent(ctx, other))
	require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: other.ID, Step: "intent", Worker: "w"}))
	earlier := l.export(t)

	a := intent("rt2-bogus-head", "sp/sled/9", 1)
	require.NoError(t, l.signing.RecordIntent(ctx, a))
	for _, step := range []string{"intent", "start", "wait"} {
		require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: step, Message: "failed: sled did not come back", Worker: "w"}))
	}
	_, err := l.verify(earlier)
	require.NoError(t, err)

	pub, err := ssh.NewPublicKey(l.pub)
	require.NoError(t, err)
	l.sql(t, fmt.Sprintf(`
ALTER TABLE update_event DISABLE TRIGGER update_event_no_change;
UPDATE update_event SET message = 'ok' WHERE attempt_id = '%[1]s';
DO $$ DECLARE r record; prev text := ''; BEGIN
  FOR r IN SELECT seq FROM update_event WHERE attempt_id = '%[1]s' ORDER BY seq LOOP
    UPDATE update_event SET prev_hash = prev WHERE seq = r.seq;
    UPDATE update_event e SET hash = update_event_hash(e) WHERE seq = r.seq RETURNING hash INTO prev;
  END LOOP; END $$;
ALTER TABLE update_event ENABLE TRIGGER update_event_no_change;
ALTER TABLE audit_head DISABLE TRIGGER audit_head_no_change;
DELETE FROM audit_head WHERE chain = 'attempt %[1]s';
INSERT INTO audit_head (tbl, chain, head_seq, head_hash, key_fingerprint, signature)
  SELECT 'update_event', 'attempt %[1]s', seq, hash, '%[2]s', 'AAAA' FROM update_event WHERE attempt_id = '%[1]s' ORDER BY seq DESC LIMIT 1;
ALTER TABLE audit_head ENABLE TRIGGER audit_head_no_change;`, a.ID, ssh.FingerprintSHA256(pub)))
	_, err = l.verify(earlier)
	require.Error(t, err, "while the bogus head is there, verify names it")

	var alarms []*ledger.UnsignedAppend
	l.signing.OnUnsignedAppend(func(u *ledger.UnsignedAppend) { alarms = append(alarms, u) })
	require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "finish", State: "failed", Worker: "w"}))
	l.sql(t, fmt.Sprintf(`
ALTER TABLE audit_head DISABLE TRIGGER audit_head_no_change;
DELETE FROM audit_head WHERE chain = 'attempt %[1]s' AND signature = 'AAAA';
ALTER TABLE audit_head ENABLE TRIGGER audit_head_no_change;`, a.ID))

	v, err := l.verify(earlier)
	require.Error(t, err, "the owner's rewrite of attempt %s is vouched for by the worker's head (alarms: %d, chains with heads %d)", a.ID, len(alarms), v.HeadChains)
}
