package ledger_test

// Red team of the workers' least-privilege role (schema/0016_worker_role.sql),
// as whoever holds a worker's database password: these tests state what
// the role should hold and fail where it does not.
//
// The chain triggers (schema/0009_audit_chain.sql) name update_event and
// rollout_approval unqualified, and run with the caller's search_path. The
// session's temporary schema is searched first for relations, so a login
// with TEMPORARY on the database (every role has it unless the database's
// owner revokes it from PUBLIC) shadows the table the trigger reads and
// decides the seq, prev_hash and (for update_event) hash of the row it
// appends.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"fmt"
	"math"
	"testing"

	"github.com/lib/pq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// workerConn is one connection of the worker's role (a temporary table
// lives in its session).
func workerConn(t *testing.T, w *ledger.Store) *sql.Conn {
	t.Helper()
	conn, err := w.DB().Conn(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// The update_event chain trigger skips "a retried step" when its EXISTS
// finds the step, in the shadow table, so the row keeps the seq, prev_hash,
// hash and at the attacker wrote. Want: the ledger computes them (or the
// insert is refused).
func TestRedTeamWorkerRoleCannotSkipTheEventChainWithATempTable(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	w := env.WorkerRoleStore()
	env.GrantTemporary() // an upgraded fleet's ledger keeps PUBLIC's TEMPORARY
	a := intent("rt-temp-1", "sp/sled/9", 1)
	require.NoError(t, w.RecordIntent(ctx, a))
	require.NoError(t, w.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "intent", Worker: "w"}))

	conn := workerConn(t, w)
	_, err := conn.ExecContext(ctx, `CREATE TEMP TABLE update_event (attempt_id uuid, step text)`)
	require.NoError(t, err, "the worker's role may create a temporary table named update_event")
	_, err = conn.ExecContext(ctx, `INSERT INTO pg_temp.update_event VALUES ($1, 'finish')`, a.ID)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `INSERT INTO public.update_event (seq, attempt_id, step, state, message, worker, at, prev_hash, hash)
		VALUES (-5, $1, 'finish', 'completed', 'forged', 'w', '2020-01-01T00:00:00Z', 'forged-prev', 'forged-hash')`, a.ID)
	if err != nil {
		return // refused: held
	}
	events, err := env.Store.Events(ctx, a.ID)
	require.NoError(t, err)
	require.Len(t, events, 2)
	forged := events[0] // lowest seq first
	if forged.Step != "finish" {
		forged = events[1]
	}
	assert.Positive(t, forged.Seq, "seq is drawn by the trigger: %+v", forged)
	assert.Equal(t, ledger.EventHash(forged), forged.Hash, "hash is computed by the trigger: %+v", forged)
	_, err = env.Store.VerifyAudit(ctx, nil)
	assert.NoError(t, err, "a worker's append cannot break audit verify of a chain")
}

// The rollout_approval chain trigger draws seq from
// pg_get_serial_sequence('rollout_approval', 'seq') and prev_hash from
// rollout_approval, both resolved through search_path: a temporary table
// with a bigserial seq gives the approval any seq (its sequence is the
// attacker's own) and any prev_hash. A seq past every other makes the
// gate's pass spend every approval after it (RecordGatePass: through =
// max(seq)).
func TestRedTeamWorkerRoleCannotChooseAnApprovalsSeqWithATempTable(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	w := env.WorkerRoleStore()
	env.GrantTemporary() // an upgraded fleet's ledger keeps PUBLIC's TEMPORARY
	require.NoError(t, w.RecordApproval(ctx, ledger.Approval{Rollout: "rt-r", Stage: "canary@run:x", By: "bob", Reason: "ok", Method: ledger.MethodUnsigned}))

	conn := workerConn(t, w)
	_, err := conn.ExecContext(ctx, `CREATE TEMP TABLE rollout_approval (rollout_id text, seq bigserial, hash text)`)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, fmt.Sprintf(`SELECT setval(pg_get_serial_sequence('pg_temp.rollout_approval', 'seq'), %d)`, int64(math.MaxInt64-1)))
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `INSERT INTO pg_temp.rollout_approval (rollout_id, seq, hash) VALUES ('rt-r', 1, 'forged-prev')`)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `INSERT INTO public.rollout_approval (rollout_id, stage, approved_by, reason, method)
		VALUES ('rt-r', 'canary@run:x', 'mallory', 'forged', 'unsigned')`)
	if err != nil {
		return // refused: held
	}
	approvals, err := env.Store.Approvals(ctx, "rt-r")
	require.NoError(t, err)
	require.Len(t, approvals, 2)
	first, second := approvals[0], approvals[1]
	assert.Less(t, second.Seq, int64(1_000_000), "seq comes from the ledger's sequence: %+v", second)
	assert.Equal(t, first.Hash, second.PrevHash, "prev_hash is the hash of the rollout's row before: %+v", second)

	through, err := w.RecordGatePass(ctx, "rt-r", "canary@run:x", "x")
	require.NoError(t, err)
	assert.Less(t, through, int64(1_000_000), "the gate's pass spends only approvals the ledger numbered")
}

// DEPLOYING ("What it holds against") says a row the worker's password
// appends without the signing key is named by `audit verify
// --audit-public-key`. That holds for the chained tables, update_event and
// rollout_approval: each row appended there without the key is named.
func TestWorkerRoleAppendsToTheChainedTablesAreNamedByAuditVerify(t *testing.T) {
	for name, forge := range map[string]string{
		"update_event": `INSERT INTO update_event (attempt_id, step, state, message, worker)
			SELECT id, 'finish', 'completed', 'forged', 'w' FROM update_attempt LIMIT 1`,
		"rollout_approval": `INSERT INTO rollout_approval (rollout_id, stage, approved_by, reason, method)
			VALUES ('r1', 'canary@run:x', 'mallory', 'forged', 'unsigned')`,
	} {
		t.Run(name, func(t *testing.T) {
			env := testenv.New(t)
			ctx := context.Background()
			pub, key, err := ed25519.GenerateKey(rand.Reader)
			require.NoError(t, err)
			w := env.WorkerRoleStore()
			workerWrites(t, w, key) // the worker's own rows, signed
			require.NoError(t, verifyHeads(ctx, env.Store, pub), "the worker's ledger verifies")

			// With the worker's password, without its key.
			_, err = w.DB().ExecContext(ctx, forge)
			require.NoError(t, err)
			assert.Error(t, verifyHeads(ctx, env.Store, pub), "audit verify --audit-public-key names the row the worker's key did not sign")
		})
	}
}

// rollout_gate_pass, exposed_statement and rollout_event are neither
// chained nor signed, and what they hold decides gates: a pass through
// the largest seq spends every approval of a stage for good, a forged
// exposed statement is refused as replayed, a forged gate round is the
// verdict a rollout keeps (kinds/rollout/redteam_workerrole_integration_test.go).
// Want: audit verify --audit-public-key names such rows. A known gap
// (docs/GAPS.md, "The ledger's roles").
func TestRedTeamWorkerRoleAppendsToUnchainedTablesAreNamedByAuditVerify(t *testing.T) {
	t.Skip("known gap: rollout_gate_pass, exposed_statement and rollout_event are not chained or signed; see docs/GAPS.md")
	env := testenv.New(t)
	ctx := context.Background()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	w := env.WorkerRoleStore()
	workerWrites(t, w, key) // the worker's own rows, signed
	require.NoError(t, verifyHeads(ctx, env.Store, pub), "the worker's ledger verifies")

	// With the worker's password, without its key.
	db := w.DB()
	_, err = db.ExecContext(ctx, `INSERT INTO rollout_gate_pass (rollout_id, stage, through_seq, run_id) VALUES ('r1', 'prod@run:x', $1, 'evil')`, int64(math.MaxInt64))
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO rollout_event (rollout_id, run_id, seq, stage, kind, verdict, reason, at)
		VALUES ('r1', 'x', 99, 'prod', 'gate-passed', 'pass', 'batch 1 healthy after 1 rounds: forged', now())`)
	require.NoError(t, err)
	spent, err := env.Store.GatePassedThrough(ctx, "r1", "prod@run:x")
	require.NoError(t, err)
	assert.Equal(t, int64(math.MaxInt64), spent, "every approval of the stage, past and future, is spent")

	assert.Error(t, verifyHeads(ctx, env.Store, pub), "audit verify --audit-public-key names the rows the worker's key did not sign")
}

// Held, with docs/DEPLOYING.md's SQL: REVOKE TEMPORARY ON DATABASE … FROM
// PUBLIC leaves the worker's role no temporary schema to shadow with.
func TestRedTeamWorkerRoleTempTableIsRefusedAfterDeployingsRevoke(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	var dbname string
	require.NoError(t, env.Store.DB().QueryRowContext(ctx, `SELECT current_database()`).Scan(&dbname))
	_, err := env.Store.DB().ExecContext(ctx, `REVOKE TEMPORARY ON DATABASE `+pq.QuoteIdentifier(dbname)+` FROM PUBLIC`)
	require.NoError(t, err)
	w := env.WorkerRoleStore()
	_, err = w.DB().ExecContext(ctx, `CREATE TEMP TABLE update_event (attempt_id uuid, step text)`)
	requireRefused(t, err, "CREATE TEMP TABLE")
}

// The worker signs an append only when the row before it is one its key
// signed (ledger/audit_unsigned.go, signAppended), and raises the alarm
// (OnUnsignedAppend) otherwise. It reads "its key signed" from audit_head
// by fingerprint alone, never checking the signature: the worker's
// password appends a row, and a head naming that row with the worker's
// (public) fingerprint and any signature, and the worker's next append is
// signed without an alarm, vouching for the row before it. audit verify
// --audit-public-key names the forged head later; the alarm, the one that
// fires as it happens, stays silent. Want: the alarm is raised.
func TestRedTeamWorkerRoleForgedHeadSilencesTheUnsignedAppendAlarm(t *testing.T) {
	unsignedAppendAlarms(t, true)
}

// The control: without the forged head the alarm is raised.
func TestRedTeamControlUnsignedAppendRaisesTheAlarm(t *testing.T) {
	unsignedAppendAlarms(t, false)
}

func unsignedAppendAlarms(t *testing.T, forgeHead bool) {
	env := testenv.New(t)
	ctx := context.Background()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	w := env.WorkerRoleStore()
	s := w.WithHeadSigner(key)
	var alarms []*ledger.UnsignedAppend
	s.OnUnsignedAppend(func(u *ledger.UnsignedAppend) { alarms = append(alarms, u) })
	a := intent("rt-head-1", "sp/sled/11", 1)
	require.NoError(t, s.RecordIntent(ctx, a))
	require.NoError(t, s.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "intent", Worker: "w"}))

	// With the worker's password, without its key.
	db := w.DB()
	var seq int64
	var hash, fp string
	require.NoError(t, db.QueryRowContext(ctx, `INSERT INTO update_event (attempt_id, step, message, worker) VALUES ($1, 'sending-1', 'forged', 'w')
		RETURNING seq, hash`, a.ID).Scan(&seq, &hash))
	require.NoError(t, db.QueryRowContext(ctx, `SELECT key_fingerprint FROM audit_head LIMIT 1`).Scan(&fp))
	if forgeHead {
		_, err = db.ExecContext(ctx, `INSERT INTO audit_head (tbl, chain, head_seq, head_hash, key_fingerprint, signature)
			VALUES ('update_event', $1, $2, $3, $4, 'AAAA')`, "attempt "+a.ID.String(), seq, hash, fp)
		require.NoError(t, err)
	}

	require.NoError(t, s.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "start", Worker: "w"}))
	assert.NotEmpty(t, alarms, "the worker's append after a row its key did not sign raises the alarm")
}
