-- The ledger's functions name their tables, sequences and functions by
-- schema, and run with a fixed search_path. A trigger runs with its
-- caller's search_path, whose first schema for relations is the session's
-- temporary one: a login with TEMPORARY on the database (PUBLIC holds it
-- unless the owner revokes it) could CREATE TEMP TABLE update_event and
-- have the chain trigger read it (skip the chain, draw seq from its own
-- sequence, take prev_hash from it). Here every name is public's, and
-- pg_temp comes last, after pg_catalog and public (functions and operators
-- are never looked up in pg_temp). Bodies and hashes are those of 0001,
-- 0007, 0009, 0012 and 0015; only the names are qualified.
-- ledger/redteam_worker_role_test.go holds the chains against it, and
-- ledger/worker_role_test.go every function of the schema to a fixed
-- search_path.

CREATE OR REPLACE FUNCTION public.audit_field(v text) RETURNS text LANGUAGE sql IMMUTABLE
    SET search_path = pg_catalog, public, pg_temp AS
$$ SELECT octet_length(coalesce(v, ''))::text || ':' || coalesce(v, '') $$;

CREATE OR REPLACE FUNCTION public.audit_time(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE
    SET search_path = pg_catalog, public, pg_temp AS
$$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') $$;

CREATE OR REPLACE FUNCTION public.audit_hash(tag text, prev text, fields text[]) RETURNS text LANGUAGE sql IMMUTABLE
    SET search_path = pg_catalog, public, pg_temp AS
$$ SELECT encode(sha256(convert_to(tag || E'\n' || prev || E'\n' ||
       (SELECT string_agg(public.audit_field(f), '' ORDER BY i) FROM unnest(fields) WITH ORDINALITY AS u(f, i)), 'UTF8')), 'hex') $$;

CREATE OR REPLACE FUNCTION public.update_event_hash(e public.update_event) RETURNS text LANGUAGE sql IMMUTABLE
    SET search_path = pg_catalog, public, pg_temp AS
$$ SELECT public.audit_hash('fleetsaga-event-v1', e.prev_hash,
       ARRAY[e.attempt_id::text, e.step, e.state, e.message, e.worker, public.audit_time(e.at)]) $$;

CREATE OR REPLACE FUNCTION public.rollout_approval_hash(a public.rollout_approval) RETURNS text LANGUAGE sql IMMUTABLE
    SET search_path = pg_catalog, public, pg_temp AS
$$ SELECT public.audit_hash('fleetsaga-approval-v1', a.prev_hash,
       ARRAY[a.rollout_id, a.stage, a.approved_by, a.reason, a.plan_digest, public.audit_time(a.at), a.principal,
             a.method, a.key_fingerprint, a.signature, a.payload, a.replay_key]) $$;

CREATE OR REPLACE FUNCTION public.update_event_chain() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    -- A retried step (ON CONFLICT DO NOTHING) is not inserted: skip the
    -- lock and the hash. Rows are never deleted, so it stays a conflict.
    IF EXISTS (SELECT 1 FROM public.update_event WHERE attempt_id = NEW.attempt_id AND step = NEW.step) THEN
        RETURN NEW;
    END IF;
    -- One append per attempt at a time, so the row before is the one this
    -- row names; seq is drawn under the lock so seq order is chain order.
    PERFORM pg_advisory_xact_lock(hashtextextended('update_event:' || NEW.attempt_id::text, 0));
    NEW.seq := nextval('public.update_event_seq_seq'::regclass);
    NEW.prev_hash := coalesce((SELECT hash FROM public.update_event WHERE attempt_id = NEW.attempt_id ORDER BY seq DESC LIMIT 1), '');
    NEW.hash := public.update_event_hash(NEW);
    RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION public.rollout_approval_chain() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('rollout_approval:' || NEW.rollout_id, 0));
    NEW.seq := nextval('public.rollout_approval_seq_seq'::regclass);
    NEW.prev_hash := coalesce((SELECT hash FROM public.rollout_approval WHERE rollout_id = NEW.rollout_id ORDER BY seq DESC LIMIT 1), '');
    NEW.hash := public.rollout_approval_hash(NEW);
    RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION public.agent_claim_release() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, public, pg_temp AS $$
BEGIN
    UPDATE public.agent_claim SET released_at = now() WHERE attempt_id = NEW.id AND released_at IS NULL;
    RETURN NEW;
END $$;

ALTER FUNCTION public.update_event_append_only() SET search_path = pg_catalog, public, pg_temp;
ALTER FUNCTION public.rollout_approval_append_only() SET search_path = pg_catalog, public, pg_temp;
ALTER FUNCTION public.audit_head_append_only() SET search_path = pg_catalog, public, pg_temp;
ALTER FUNCTION public.rollout_gate_pass_append_only() SET search_path = pg_catalog, public, pg_temp;
ALTER FUNCTION public.exposed_statement_append_only() SET search_path = pg_catalog, public, pg_temp;
