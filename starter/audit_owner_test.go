package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// ownerLedger is a ledger of two attempts of four events each, and the
// export taken of it before the owner acts.
type ownerLedger struct {
	env      *testenv.Env
	db       []string
	attempts [2]uuid.UUID
	export   string
}

func newOwnerLedger(t *testing.T, store func(*ledger.Store) *ledger.Store) ownerLedger {
	t.Helper()
	env := testenv.New(t)
	ctx := context.Background()
	s := store(env.Store)
	o := ownerLedger{env: env, db: []string{"DATABASE_URL=" + env.DatabaseURL}}
	for i := range o.attempts {
		a := ledger.Attempt{ID: uuid.New(), UpdateID: fmt.Sprint("u", i), Attempt: 1, Kind: "sp-firmware", Target: fmt.Sprint("sp/sled/", i), WorkflowID: fmt.Sprint("u", i), RunID: "r"}
		require.NoError(t, s.RecordIntent(ctx, a))
		for _, step := range []string{"intent", "start", "wait", "finish"} {
			require.NoError(t, s.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: step, Message: "ok", Worker: "w"}))
		}
		o.attempts[i] = a.ID
	}
	r := runStarter(t, o.db, "audit", "export")
	require.Equal(t, exitOK, r.code, r.stderr)
	o.export = filepath.Join(t.TempDir(), "earlier.jsonl")
	require.NoError(t, os.WriteFile(o.export, []byte(r.stdout), 0o600))
	return o
}

// asOwner runs SQL as the database's owner, in psql's way: one script,
// append-only triggers off where the owner chooses.
func (o ownerLedger) asOwner(t *testing.T, script string) {
	t.Helper()
	_, err := o.env.Store.DB().Exec(script)
	require.NoError(t, err, script)
}

// rewriteAndRecompute edits an attempt's second event and recomputes
// its hash and every later link with the schema's own function, so the
// chain verifies on its own.
func rewriteAndRecompute(attempt uuid.UUID) string {
	return fmt.Sprintf(`
ALTER TABLE update_event DISABLE TRIGGER update_event_no_change;
UPDATE update_event SET message = 'nothing happened' WHERE attempt_id = '%[1]s' AND step = 'start';
DO $$ DECLARE r record; prev text := ''; BEGIN
  FOR r IN SELECT seq FROM update_event WHERE attempt_id = '%[1]s' ORDER BY seq LOOP
    UPDATE update_event SET prev_hash = prev WHERE seq = r.seq;
    UPDATE update_event e SET hash = update_event_hash(e) WHERE seq = r.seq RETURNING hash INTO prev;
  END LOOP; END $$;
ALTER TABLE update_event ENABLE TRIGGER update_event_no_change;`, attempt)
}

func dropTail(attempt uuid.UUID) string {
	return fmt.Sprintf(`
ALTER TABLE update_event DISABLE TRIGGER update_event_no_change;
DELETE FROM update_event WHERE attempt_id = '%[1]s' AND step IN ('wait', 'finish');
ALTER TABLE update_event ENABLE TRIGGER update_event_no_change;`, attempt)
}

// Each thing an owner can do that leaves every chain self-consistent
// passes verify alone, and is named by verify --against the export
// taken before.
func TestAuditVerifyAgainstAnEarlierExportNamesWhatTheOwnerChanged(t *testing.T) {
	same := func(s *ledger.Store) *ledger.Store { return s }
	for _, tc := range []struct {
		name   string
		script func(o ownerLedger) string
		want   func(o ownerLedger) string
	}{
		{"TRUNCATE update_event", func(ownerLedger) string { return `TRUNCATE update_event` },
			func(o ownerLedger) string {
				return fmt.Sprintf("update_event chain attempt %s of the earlier export (4 rows, head seq", min(o.attempts[0].String(), o.attempts[1].String()))
			}},
		{"DELETE a tail", func(o ownerLedger) string { return dropTail(o.attempts[1]) },
			func(o ownerLedger) string {
				return fmt.Sprintf("update_event chain attempt %s has 2 rows, the earlier export had 4: its rows after seq", o.attempts[1])
			}},
		{"rewrite and recompute", func(o ownerLedger) string { return rewriteAndRecompute(o.attempts[0]) },
			func(o ownerLedger) string {
				return fmt.Sprintf("update_event chain attempt %s: its row 4 (seq", o.attempts[0])
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOwnerLedger(t, same)
			o.asOwner(t, tc.script(o))
			r := runStarter(t, o.db, "audit", "verify", "--skip-signatures")
			require.Equal(t, exitOK, r.code, "the chains alone hold after the owner's edit: %s", r.stderr)
			r = runStarter(t, o.db, "audit", "verify", "--skip-signatures", "--against", o.export)
			require.Equal(t, exitFailed, r.code, r.stdout)
			require.Contains(t, r.stderr, tc.want(o))
		})
	}

	t.Run("an untouched ledger that grew passes", func(t *testing.T) {
		o := newOwnerLedger(t, same)
		require.NoError(t, o.env.Store.AppendEvent(context.Background(), ledger.Event{AttemptID: o.attempts[0], Step: "post", Worker: "w"}))
		r := runStarter(t, o.db, "audit", "verify", "--skip-signatures", "--against", o.export)
		require.Equal(t, exitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, "the 2 chains of the earlier export are prefixes of today's")
	})
}

// headKey writes the worker's ed25519 head-signing key (OpenSSH format)
// and its public key, as an operator makes them with ssh-keygen.
func headKey(t *testing.T) (ed25519.PrivateKey, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(priv, "fleetsaga worker")
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "audit_head"), pem.EncodeToMemory(block), 0o600))
	sp, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	pubFile := filepath.Join(dir, "audit_head.pub")
	require.NoError(t, os.WriteFile(pubFile, ssh.MarshalAuthorizedKey(sp), 0o600))
	return priv, pubFile
}

// With the worker signing each chain's head with a key the database does
// not hold, an owner who recomputes a chain, drops its tail or appends a
// row of his own is named by verify with the worker's public key, with
// no earlier export.
func TestAuditVerifySignedHeadsCatchTheOwner(t *testing.T) {
	key, pub := headKey(t)
	signing := func(s *ledger.Store) *ledger.Store { return s.WithHeadSigner(key) }
	for _, tc := range []struct {
		name   string
		script func(o ownerLedger) string
		want   func(o ownerLedger) string
	}{
		{"rewrite and recompute", func(o ownerLedger) string { return rewriteAndRecompute(o.attempts[0]) },
			func(o ownerLedger) string {
				return fmt.Sprintf("update_event chain attempt %s: the worker signed head seq", o.attempts[0])
			}},
		{"DELETE a tail", func(o ownerLedger) string { return dropTail(o.attempts[1]) },
			func(o ownerLedger) string {
				return fmt.Sprintf("update_event chain attempt %s: the worker signed head seq", o.attempts[1])
			}},
		{"TRUNCATE update_event", func(ownerLedger) string { return `TRUNCATE update_event` },
			func(o ownerLedger) string {
				return "the worker signed a head of update_event chain attempt "
			}},
		{"INSERT an event of his own", func(o ownerLedger) string {
			return fmt.Sprintf(`INSERT INTO update_event (attempt_id, step, message, worker) VALUES ('%s', 'rollback', 'none needed', 'w')`, o.attempts[0])
		},
			func(o ownerLedger) string {
				return fmt.Sprintf("update_event chain attempt %s: its row seq", o.attempts[0])
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOwnerLedger(t, signing)
			r := runStarter(t, o.db, "audit", "verify", "--skip-signatures", "--audit-public-key", pub)
			require.Equal(t, exitOK, r.code, "before the owner's edit: %s", r.stderr)
			require.Contains(t, r.stdout, "8 rows in 2 chains")
			require.Contains(t, r.stdout, "2 chain heads signed by the worker")
			o.asOwner(t, tc.script(o))
			r = runStarter(t, o.db, "audit", "verify", "--skip-signatures", "--audit-public-key", pub)
			require.Equal(t, exitFailed, r.code, r.stdout)
			require.Contains(t, r.stderr, tc.want(o))
		})
	}

	t.Run("a head signed by another key", func(t *testing.T) {
		other, _ := headKey(t)
		o := newOwnerLedger(t, func(s *ledger.Store) *ledger.Store { return s.WithHeadSigner(other) })
		r := runStarter(t, o.db, "audit", "verify", "--skip-signatures", "--audit-public-key", pub)
		require.Equal(t, exitFailed, r.code, r.stdout)
		require.Contains(t, r.stderr, "is not signed by the worker's key")
	})
}
