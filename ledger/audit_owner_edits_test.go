package ledger_test

// Edits by the database's owner (or anyone with INSERT on the ledger's
// tables) that `starter audit verify --allowed-signers F --audit-public-key
// K --against EARLIER` must name, however the worker goes on working.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

type signedLedger struct {
	env     *testenv.Env
	pub     ed25519.PublicKey
	key     ed25519.PrivateKey
	signing *ledger.Store // the worker, with --audit-signing-key
}

func newSignedLedger(t *testing.T) signedLedger {
	env := testenv.New(t)
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return signedLedger{env: env, pub: pub, key: key, signing: env.Store.WithHeadSigner(key)}
}

// export is `starter audit export`, kept away from the database.
func (l signedLedger) export(t *testing.T) *ledger.EarlierExport {
	e := ledger.NewEarlierExport()
	require.NoError(t, l.env.Store.ExportAudit(context.Background(), e.Add))
	return e
}

// verify is audit verify with every flag the docs recommend: a keyring
// (here one that accepts no signature at all), the worker's public key and
// an earlier export.
func (l signedLedger) verify(against *ledger.EarlierExport) (*ledger.AuditVerifier, error) {
	v := &ledger.AuditVerifier{
		HeadKey:        l.pub,
		Against:        against,
		CheckSignature: func(ledger.Approval) error { return errors.New("no signature verifies") },
	}
	if err := l.env.Store.ExportAudit(context.Background(), v.Add); err != nil {
		return v, err
	}
	return v, v.Finish()
}

func (l signedLedger) sql(t *testing.T, script string) {
	t.Helper()
	_, err := l.env.Store.DB().Exec(script)
	require.NoError(t, err, script)
}

// An owner's row inserted with a plain INSERT (the trigger hashes it) is
// named, and still named after the worker's next append to that chain.
func TestAnOwnersRowStaysNamedAfterTheWorkersNextAppend(t *testing.T) {
	l := newSignedLedger(t)
	ctx := context.Background()
	a := intent("owner-1", "sp/sled/1", 1)
	require.NoError(t, l.signing.RecordIntent(ctx, a))
	require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "intent", Worker: "w"}))
	earlier := l.export(t)
	require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "start", Worker: "w"}))

	l.sql(t, fmt.Sprintf(`INSERT INTO update_event (attempt_id, step, message, worker) VALUES ('%s', 'health-check', 'passed', 'w')`, a.ID))
	_, err := l.verify(earlier)
	require.Error(t, err, "right after the INSERT the unsigned newest row is named")

	var alarms []*ledger.UnsignedAppend
	l.signing.OnUnsignedAppend(func(u *ledger.UnsignedAppend) { alarms = append(alarms, u) })
	require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "finish", Worker: "w"}), "the update goes on")
	_, err = l.verify(earlier)
	require.Error(t, err, "the owner's row in the middle of the chain has no head of its own")
	require.Len(t, alarms, 1, "the worker refused to sign after the owner's row, and said so")
}

// The owner rewrites rows the worker signed after the last export,
// recomputes the chain with update_event_hash and deletes their heads:
// neither the worker's next append nor its next start signs it again.
func TestARewrittenChainWithItsHeadsDeletedIsNotSignedAgain(t *testing.T) {
	for _, resign := range []string{"next append", "worker restart"} {
		t.Run(resign, func(t *testing.T) {
			l := newSignedLedger(t)
			ctx := context.Background()
			a := intent("owner-2", "sp/sled/2", 1)
			require.NoError(t, l.signing.RecordIntent(ctx, a))
			require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "intent", Worker: "w"}))
			earlier := l.export(t)
			for _, step := range []string{"start", "wait"} {
				require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: step, Message: "failed: sled did not come back", Worker: "w"}))
			}
			_, err := l.verify(earlier)
			require.NoError(t, err)

			l.sql(t, fmt.Sprintf(`
ALTER TABLE update_event DISABLE TRIGGER update_event_no_change;
UPDATE update_event SET message = 'ok' WHERE attempt_id = '%[1]s' AND step IN ('start', 'wait');
DO $$ DECLARE r record; prev text := ''; BEGIN
  FOR r IN SELECT seq FROM update_event WHERE attempt_id = '%[1]s' ORDER BY seq LOOP
    UPDATE update_event SET prev_hash = prev WHERE seq = r.seq;
    UPDATE update_event e SET hash = update_event_hash(e) WHERE seq = r.seq RETURNING hash INTO prev;
  END LOOP; END $$;
ALTER TABLE update_event ENABLE TRIGGER update_event_no_change;
ALTER TABLE audit_head DISABLE TRIGGER audit_head_no_change;
DELETE FROM audit_head WHERE chain = 'attempt %[1]s'
  AND head_seq >= (SELECT seq FROM update_event WHERE attempt_id = '%[1]s' AND step = 'start');
ALTER TABLE audit_head ENABLE TRIGGER audit_head_no_change;`, a.ID))
			_, err = l.verify(earlier)
			require.Error(t, err, "before the worker signs again")

			if resign == "next append" {
				require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "finish", Worker: "w"}))
			} else {
				_, err := l.signing.SignHeads(ctx)
				require.NoError(t, err)
			}
			_, err = l.verify(earlier)
			require.Error(t, err, "rows the worker signed were rewritten, their heads deleted; verify calls the chain intact")
		})
	}
}

// A chain forged whole with seq 0 and no head is named.
func TestAForgedChainAtSeqZeroIsNamed(t *testing.T) {
	l := newSignedLedger(t)
	ctx := context.Background()
	require.NoError(t, l.signing.RecordApproval(ctx, ledger.Approval{Rollout: "staging", Stage: "canary", By: "bob", Reason: "ok", Method: ledger.MethodUnsigned}))
	earlier := l.export(t)

	l.sql(t, `
ALTER TABLE rollout_approval DISABLE TRIGGER rollout_approval_chain;
ALTER TABLE rollout_approval DISABLE TRIGGER rollout_approval_no_change;
INSERT INTO rollout_approval (rollout_id, stage, approved_by, reason, plan_digest, method, seq)
  VALUES ('prod', 'all-sleds', 'alice', 'approved in the change board', 'd1', 'unsigned', 0);
UPDATE rollout_approval a SET hash = rollout_approval_hash(a) WHERE rollout_id = 'prod';
ALTER TABLE rollout_approval ENABLE TRIGGER rollout_approval_no_change;
ALTER TABLE rollout_approval ENABLE TRIGGER rollout_approval_chain;`)
	v, err := l.verify(earlier)
	require.Error(t, err, "a forged approval chain with no signed head (heads read %d, chains with heads %d)", v.Heads, v.HeadChains)
}

// A worker appending while verify reads the ledger does not make an
// untouched ledger fail: the export is one snapshot.
func TestVerifyOfALiveLedgerReadsOneSnapshot(t *testing.T) {
	l := newSignedLedger(t)
	ctx := context.Background()
	a := intent("owner-4", "sp/sled/4", 1)
	require.NoError(t, l.signing.RecordIntent(ctx, a))
	require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "intent", Worker: "w"}))

	v := &ledger.AuditVerifier{HeadKey: l.pub}
	appended := false
	err := l.env.Store.ExportAudit(ctx, func(r ledger.AuditRecord) error {
		if !appended {
			appended = true // the worker goes on working while verify reads
			require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "start", Worker: "w"}))
		}
		return v.Add(r)
	})
	if err == nil {
		err = v.Finish()
	}
	require.NoError(t, err, "nobody edited the ledger")
}

// The owner INSERTs the step the worker writes next ("finish"), so the
// worker's own append inserts nothing: the owner's row is named. So is
// TRUNCATE audit_head followed by a worker restart (against the export).
func TestAnOwnersStepThatPreemptsTheWorkersIsNamed(t *testing.T) {
	l := newSignedLedger(t)
	ctx := context.Background()
	a := intent("owner-5", "sp/sled/5", 1)
	require.NoError(t, l.signing.RecordIntent(ctx, a))
	require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "intent", Worker: "w"}))
	earlier := l.export(t)

	l.sql(t, fmt.Sprintf(`INSERT INTO update_event (attempt_id, step, state, message, worker) VALUES ('%s', 'finish', 'succeeded', 'SP updated', 'w')`, a.ID))
	var alarms []*ledger.UnsignedAppend
	l.signing.OnUnsignedAppend(func(u *ledger.UnsignedAppend) { alarms = append(alarms, u) })
	require.NoError(t, l.signing.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "finish", State: "failed", Message: "SP bricked", Worker: "w"}))
	_, err := l.verify(earlier)
	assert.Error(t, err, "the worker's 'finish' was dropped: the owner's stands, unsigned")
	assert.Len(t, alarms, 1, "the worker said its row was not inserted")

	l.sql(t, `TRUNCATE audit_head`)
	_, err = l.signing.SignHeads(ctx)
	require.NoError(t, err)
	_, err = l.verify(earlier)
	assert.Error(t, err, "every head truncated, re-signed at the worker's start")
}
