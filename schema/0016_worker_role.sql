-- The workers' role: fleetsaga_worker (NOLOGIN), granted to each worker's
-- login role (GRANT fleetsaga_worker TO <login>), holds only what the
-- worker does, so its password does not own the ledger. The role that runs
-- the migrations owns the tables; the worker's role cannot ALTER, DISABLE
-- or DROP a trigger, TRUNCATE, DELETE, or UPDATE the append-only tables
-- (docs/DEPLOYING.md, "The ledger's roles"). Roles are the cluster's: two
-- ledgers on one server share it (each database's CONNECT keeps them apart).
--
-- Every table needs its line here, or in the migration that adds it
-- (ledger/worker_role_test.go holds each table to its privileges).
-- A role of that name made by hand must be the NOLOGIN group it is meant
-- to be: a login, a superuser, or a role that bypasses row security or
-- creates roles would get the grants below with more than they are meant
-- to give (its password would append to the ledger), so it is refused.
DO $$
DECLARE
    r pg_roles;
BEGIN
    SELECT * INTO r FROM pg_roles WHERE rolname = 'fleetsaga_worker';
    IF FOUND AND (r.rolcanlogin OR r.rolsuper OR r.rolbypassrls OR r.rolcreaterole) THEN
        RAISE EXCEPTION 'role fleetsaga_worker exists and %: it must be a NOLOGIN role that is none of these, to be granted to the workers'' logins',
            concat_ws(', ', CASE WHEN r.rolcanlogin THEN 'can log in' END, CASE WHEN r.rolsuper THEN 'is a superuser' END,
                      CASE WHEN r.rolbypassrls THEN 'has BYPASSRLS' END, CASE WHEN r.rolcreaterole THEN 'has CREATEROLE' END)
            USING HINT = 'as a superuser: ALTER ROLE fleetsaga_worker NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE (or give its login another name), then migrate again';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'fleetsaga_worker') THEN
        BEGIN
            CREATE ROLE fleetsaga_worker NOLOGIN;
        EXCEPTION
            -- another database's migration created it at the same moment
            WHEN duplicate_object OR unique_violation THEN NULL;
            WHEN insufficient_privilege THEN
                RAISE EXCEPTION 'role fleetsaga_worker does not exist, and % may not create it', current_user
                    USING HINT = 'as a superuser or a role with CREATEROLE run CREATE ROLE fleetsaga_worker NOLOGIN, then migrate again';
        END;
    END IF;
END $$;

-- The schema's version: a worker that may not migrate checks it at start.
GRANT SELECT ON schema_migration TO fleetsaga_worker;

-- Append-only (and, but for rollout_event and zone_saga_reassignment,
-- chained or guarded by triggers): read and append.
GRANT SELECT, INSERT ON update_event, rollout_approval, audit_head, rollout_gate_pass,
    exposed_statement, rollout_event, zone_saga_reassignment TO fleetsaga_worker;
-- The chain triggers (0009) and audit_head draw seq.
GRANT USAGE ON SEQUENCE update_event_seq_seq, rollout_approval_seq_seq, audit_head_seq_seq TO fleetsaga_worker;

-- Mutable: the columns the worker changes, no others, and no DELETE.
GRANT SELECT, INSERT ON update_attempt, zone_disposition, agent_rollout_server, agent_claim, bootimage_change
    TO fleetsaga_worker;
GRANT UPDATE (run_id, phase, progress_done, progress_total, state, outcome, error, updated_at, finished_at)
    ON update_attempt TO fleetsaga_worker;
GRANT UPDATE (disposition, expunged_as_of, attempt_id, ready_for_cleanup, ready_generation, ready_at,
              completed_at, sagas_moved, saga_new_owner, updated_at)
    ON zone_disposition TO fleetsaga_worker;
GRANT UPDATE (state, outcome, reason, attempt_id, duration_ms, updated_at) ON agent_rollout_server TO fleetsaga_worker;
-- agent_claim_release (0007) runs as the worker that ends the attempt.
GRANT UPDATE (released_at) ON agent_claim TO fleetsaga_worker;
GRANT UPDATE (applied_image, scaled_replicas) ON bootimage_change TO fleetsaga_worker;
