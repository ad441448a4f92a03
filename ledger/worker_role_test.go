package ledger_test

// The workers' least-privilege role (schema/0016_worker_role.sql), tried
// as whoever holds a worker's database password would: every edit of the
// audit trail is refused, and everything the worker does still works.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// requireRefused: the statement failed for want of a privilege
// (insufficient_privilege: "permission denied …", "must be owner of …").
func requireRefused(t *testing.T, err error, stmt string) {
	t.Helper()
	var pqErr *pq.Error
	if assert.ErrorAs(t, err, &pqErr, "the worker's role ran %q", stmt) {
		assert.Equal(t, pq.ErrorCode("42501"), pqErr.Code, "%s: %v", stmt, err)
	}
}

// workerWrites writes a row to every table, as the worker role, through
// the ledger's own calls (signed heads included), and returns the attempt.
func workerWrites(t *testing.T, w *ledger.Store, key ed25519.PrivateKey) ledger.Attempt {
	t.Helper()
	ctx := context.Background()
	s := w.WithHeadSigner(key)
	a := intent("role-1", "sp/sled/7", 1)
	require.NoError(t, s.RecordIntent(ctx, a))
	require.NoError(t, s.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "intent", Worker: "w"}))
	require.NoError(t, s.AppendEvent(ctx, ledger.Event{AttemptID: a.ID, Step: "intent", Worker: "w"}), "a retried step")
	require.NoError(t, s.RecordApproval(ctx, ledger.Approval{Rollout: "r1", Stage: "canary@run:x", By: "bob", Reason: "ok", Method: ledger.MethodUnsigned}))
	_, err := s.RecordGatePass(ctx, "r1", "canary@run:x", "x")
	require.NoError(t, err)
	require.NoError(t, s.RecordExposed(ctx, "exposed:k1", "r1", "start"))
	_, err = s.RecordRolloutEvent(ctx, ledger.RolloutEvent{Rollout: "r1", RunID: "x", Seq: 1, Stage: "canary", Kind: "gate-passed", Reason: "ok", At: time.Now().Truncate(time.Millisecond)})
	require.NoError(t, err)
	return a
}

// Whoever has a worker's password cannot rewrite, delete, truncate or
// unguard the ledger: not the chained tables, their heads or the spent
// gate passes, nor the mutable tables' rows or their identity.
func TestWorkerRoleIsRefusedEveryEditOfTheLedger(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	w := env.WorkerRoleStore()
	a := workerWrites(t, w, key)
	before := exportAll(t, env.Store)

	db := w.DB()
	try := func(stmt string) {
		t.Helper()
		_, err := db.ExecContext(ctx, stmt)
		requireRefused(t, err, stmt)
	}
	appendOnly := []string{"update_event", "rollout_approval", "audit_head", "rollout_gate_pass",
		"exposed_statement", "rollout_event", "zone_saga_reassignment"}
	for _, tbl := range appendOnly {
		try(`UPDATE ` + tbl + ` SET at = at`)
	}
	for _, tbl := range ledgerTables(t, env) {
		try(`DELETE FROM ` + tbl)
		try(`TRUNCATE ` + tbl)
		try(`ALTER TABLE ` + tbl + ` DISABLE TRIGGER ALL`)
		try(`ALTER TABLE ` + tbl + ` OWNER TO current_user`)
		try(`CREATE TRIGGER sneak BEFORE INSERT ON ` + tbl + ` FOR EACH ROW EXECUTE FUNCTION update_event_append_only()`)
		try(`DROP TABLE ` + tbl)
	}
	rows, err := env.Store.DB().QueryContext(ctx, `SELECT tgrelid::regclass::text, tgname FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1, 2`)
	require.NoError(t, err)
	var triggers [][2]string
	for rows.Next() {
		var tr [2]string
		require.NoError(t, rows.Scan(&tr[0], &tr[1]))
		triggers = append(triggers, tr)
	}
	require.NoError(t, rows.Err())
	require.GreaterOrEqual(t, len(triggers), 8, "the chain and append-only triggers: %v", triggers)
	for _, tr := range triggers {
		try(fmt.Sprintf(`ALTER TABLE %s DISABLE TRIGGER %s`, tr[0], tr[1]))
		try(fmt.Sprintf(`DROP TRIGGER %s ON %s`, tr[1], tr[0]))
	}
	// The trigger functions, the hash, the replica mode that skips
	// triggers, and the sequences that order the chains.
	try(`CREATE OR REPLACE FUNCTION update_event_chain() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`)
	try(`CREATE OR REPLACE FUNCTION update_event_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`)
	try(`ALTER FUNCTION audit_hash(text, text, text[]) RENAME TO audit_hash_old`)
	try(`SET session_replication_role = replica`)
	try(`SELECT setval('update_event_seq_seq', 1)`)
	// A mutable table: its identity columns are not the worker's to change.
	try(fmt.Sprintf(`UPDATE update_attempt SET target = 'sp/sled/8' WHERE id = '%s'`, a.ID))
	try(fmt.Sprintf(`UPDATE update_attempt SET kind = 'host-flash', created_at = now() WHERE id = '%s'`, a.ID))
	try(`INSERT INTO schema_migration (version, name) VALUES (99, '0099_evil.sql')`)
	try(`CREATE TABLE update_event_shadow (LIKE update_event)`)

	assert.Equal(t, before, exportAll(t, env.Store), "every row as the worker wrote it")
	require.NoError(t, verifyHeads(ctx, env.Store, pub), "audit verify --audit-public-key passes")
}

// verifyHeads is `starter audit verify --audit-public-key` over store's
// ledger, approvals' own signatures not checked.
func verifyHeads(ctx context.Context, store *ledger.Store, pub ed25519.PublicKey) error {
	v := &ledger.AuditVerifier{HeadKey: pub, CheckSignature: func(ledger.Approval) error { return nil }}
	if err := store.ExportAudit(ctx, v.Add); err != nil {
		return err
	}
	return v.Finish()
}

// Every call the worker makes to the ledger works as the worker role:
// attempts, events and their heads, approvals and gate passes, agent
// plans and claims (released by the trigger when the attempt ends), boot
// image changes, zone expunges and saga moves.
func TestWorkerRoleDoesEverythingTheWorkerDoes(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	w := env.WorkerRoleStore()
	a := workerWrites(t, w, key)
	s := w.WithHeadSigner(key)

	// A reset run adopts the attempt (ON CONFLICT DO UPDATE), moves it on
	// and ends it.
	reset := a
	reset.RunID = "run-2"
	adopted, err := s.AdoptIntent(ctx, reset)
	require.NoError(t, err)
	require.True(t, adopted)
	require.NoError(t, s.SetProgress(ctx, ledger.Progress{AttemptID: a.ID, Phase: "sending", Done: 1, Total: 2}))
	_, err = s.SignUnheadedChains(ctx)
	require.NoError(t, err)

	// Approvals at a gate, checked and spent.
	require.NoError(t, s.RecordGateApproval(ctx, ledger.Approval{Rollout: "r2", Stage: "canary@run:y", By: "carol", Reason: "ok", Method: ledger.MethodUnsigned}, "y"))
	through, err := s.RecordGatePass(ctx, "r2", "canary@run:y", "y")
	require.NoError(t, err)
	require.Positive(t, through)
	_, err = s.AppendRolloutEvent(ctx, ledger.RolloutEvent{Rollout: "r2", RunID: "y", Stage: "canary", Kind: "paused", Reason: "r", At: time.Now().Truncate(time.Millisecond)})
	require.NoError(t, err)

	// An agent rollout: its plan, its claims, a server's state, the stop;
	// ending its attempt releases the claims (agent_claim_release).
	rollout := intent("agents-1", "dc/vm-agent", 1)
	require.NoError(t, s.RecordIntent(ctx, rollout))
	srv := uuid.New()
	require.NoError(t, s.InsertAgentPlan(ctx, rollout.ID, []ledger.AgentServer{
		{Seq: 1, ServerUUID: srv, Hostname: "cn1", State: "pending"},
		{Seq: 2, ServerUUID: uuid.New(), Hostname: "cn2", State: "pending"}}))
	require.NoError(t, s.ClaimAgents(ctx, rollout.ID, []string{"vm-agent"}))
	require.NoError(t, s.SetAgentServer(ctx, rollout.ID, ledger.AgentServer{ServerUUID: srv, State: "done", Outcome: "installed", DurationMS: 5}))
	n, err := s.StopAgentRollout(ctx, rollout.ID, "cancelled")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoError(t, s.FinishAttempt(ctx, ledger.Finish{AttemptID: rollout.ID, State: ledger.StateCancelled, Outcome: "cancelled"}))
	claims, err := s.ActiveAgentClaims(ctx)
	require.NoError(t, err)
	require.Zero(t, claims, "released by the trigger, as the worker")

	// A boot image bump's changes, recorded twice (ON CONFLICT DO UPDATE),
	// and adopted by the next bump.
	bump := intent("bump-1", "ocp/c1", 1)
	require.NoError(t, s.RecordIntent(ctx, bump))
	change := ledger.BootImageChange{AttemptID: bump.ID, MachineSet: "ms-a", Change: ledger.BootImageChangeScale, PreviousReplicas: 2, ScaledReplicas: 3}
	require.NoError(t, s.RecordBootImageChange(ctx, change))
	change.ScaledReplicas = 4
	require.NoError(t, s.RecordBootImageChange(ctx, change))
	require.NoError(t, s.FinishAttempt(ctx, ledger.Finish{AttemptID: bump.ID, State: ledger.StateFailed, Outcome: "abandoned"}))
	next := intent("bump-2", "ocp/c1", 1)
	require.NoError(t, s.RecordIntent(ctx, next))
	adoptedChanges, err := s.AdoptAbandonedBootImageChanges(ctx, next.ID)
	require.NoError(t, err)
	require.Len(t, adoptedChanges, 1)

	// A zone expunge, rebased, proven gone, its sagas moved, committed.
	exp := intent("expunge-1", "zone/z1", 1)
	require.NoError(t, s.RecordIntent(ctx, exp))
	zone, sled, owner := uuid.New(), uuid.New(), uuid.New()
	_, err = s.RecordZoneExpunge(ctx, ledger.ExpungeIntent{ZoneID: zone, SledID: sled, Kind: "nexus", ExpungedAsOf: 3, AttemptID: exp.ID})
	require.NoError(t, err)
	_, err = s.RecordZoneExpunge(ctx, ledger.ExpungeIntent{ZoneID: zone, SledID: sled, Kind: "nexus", ExpungedAsOf: 3, AttemptID: exp.ID})
	require.NoError(t, err, "again: ON CONFLICT DO UPDATE … WHERE")
	_, err = s.RebaseZoneExpunge(ctx, zone, 3, 4)
	require.NoError(t, err)
	_, err = s.MarkZoneReadyForCleanup(ctx, zone, 4)
	require.NoError(t, err)
	require.NoError(t, s.MoveSagasTo(ctx, owner, func(context.Context) error { return nil }))
	require.NoError(t, s.RecordSagaReassignment(ctx, ledger.SagaReassignment{ZoneID: zone, AttemptID: exp.ID, NewOwner: owner, Sagas: []uuid.UUID{uuid.New()}}))
	z, err := s.CompleteZoneExpunge(ctx, zone, 1, owner)
	require.NoError(t, err)
	require.True(t, z.Completed())
	require.NoError(t, s.FinishAttempt(ctx, ledger.Finish{AttemptID: a.ID, State: ledger.StateCompleted, Outcome: "completed"}))

	// And what it reads.
	_, err = s.MeasuredDurations(ctx, []string{"sp-firmware"}, 5)
	require.NoError(t, err)
	_, err = s.List(ctx, ledger.ListFilter{})
	require.NoError(t, err)
	require.NoError(t, ledger.CheckSchema(ctx, w.DB()))
}

// Each table's privileges for fleetsaga_worker are exactly these: a table
// a migration adds without its grants (or with more than it needs) fails
// here.
func TestWorkerRoleHoldsTheLeastPrivilegeOnEveryTable(t *testing.T) {
	env := testenv.New(t)
	want := map[string]string{
		"schema_migration":       "SELECT",
		"update_event":           "INSERT SELECT",
		"rollout_approval":       "INSERT SELECT",
		"audit_head":             "INSERT SELECT",
		"rollout_gate_pass":      "INSERT SELECT",
		"exposed_statement":      "INSERT SELECT",
		"rollout_event":          "INSERT SELECT",
		"zone_saga_reassignment": "INSERT SELECT",
		"update_attempt":         "INSERT SELECT UPDATE(error,finished_at,outcome,phase,progress_done,progress_total,run_id,state,updated_at)",
		"zone_disposition":       "INSERT SELECT UPDATE(attempt_id,completed_at,disposition,expunged_as_of,ready_at,ready_for_cleanup,ready_generation,saga_new_owner,sagas_moved,updated_at)",
		"agent_rollout_server":   "INSERT SELECT UPDATE(attempt_id,duration_ms,outcome,reason,state,updated_at)",
		"agent_claim":            "INSERT SELECT UPDATE(released_at)",
		"bootimage_change":       "INSERT SELECT UPDATE(applied_image,scaled_replicas)",
	}
	got := map[string]string{}
	db := env.Store.DB()
	for _, tbl := range ledgerTables(t, env) {
		var privs []string
		for _, p := range []string{"SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"} {
			var has bool
			require.NoError(t, db.QueryRow(`SELECT has_table_privilege('fleetsaga_worker', $1, $2)`, tbl, p).Scan(&has))
			if has {
				privs = append(privs, p)
			}
		}
		var cols []string
		rows, err := db.Query(`SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped
			AND has_column_privilege('fleetsaga_worker', attrelid, attnum, 'UPDATE') ORDER BY attname`, tbl)
		require.NoError(t, err)
		for rows.Next() {
			var c string
			require.NoError(t, rows.Scan(&c))
			cols = append(cols, c)
		}
		require.NoError(t, rows.Err())
		if len(cols) > 0 && !strings.Contains(strings.Join(privs, " "), "UPDATE") {
			privs = append(privs, "UPDATE("+strings.Join(cols, ",")+")")
		}
		sort.Strings(privs)
		got[tbl] = strings.Join(privs, " ")
	}
	assert.Equal(t, want, got)
	var seqs int
	require.NoError(t, db.QueryRow(`SELECT count(*) FILTER (WHERE has_sequence_privilege('fleetsaga_worker', oid, 'USAGE')
		AND NOT has_sequence_privilege('fleetsaga_worker', oid, 'UPDATE'))
		FROM (SELECT oid FROM pg_class WHERE relkind = 'S' AND relnamespace = current_schema()::regnamespace OFFSET 0) s`).Scan(&seqs))
	assert.Equal(t, 3, seqs, "nextval on the three chained or headed tables' seq, never setval")
}

// ledgerTables is every table of the ledger's schema.
func ledgerTables(t *testing.T, env *testenv.Env) []string {
	t.Helper()
	rows, err := env.Store.DB().Query(`SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1`)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		out = append(out, n)
	}
	require.NoError(t, rows.Err())
	require.Contains(t, out, "update_event")
	return out
}

// exportAll is the audit export, heads included, as JSON lines.
func exportAll(t *testing.T, s *ledger.Store) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, s.ExportAudit(context.Background(), func(r ledger.AuditRecord) error {
		j, err := json.Marshal(r)
		if err != nil {
			return err
		}
		b.Write(j)
		b.WriteByte('\n')
		return nil
	}))
	if b.Len() == 0 {
		require.NoError(t, errors.New("the export is empty"))
	}
	return b.String()
}
