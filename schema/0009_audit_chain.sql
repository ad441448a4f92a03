-- An audit trail that proves itself. Every update_event row carries the
-- hash of the row before it in its attempt (prev_hash) and its own hash
-- over its content and prev_hash; every rollout_approval row the same
-- within its rollout. The hashes are computed here, by BEFORE INSERT
-- triggers, in the transaction that appends the row, so no writer can skip
-- them; `starter audit verify` recomputes them offline (ledger/audit.go
-- holds the same formula), so an edit by anyone, a database administrator
-- who disables the append-only trigger included, breaks the chain at the
-- edited row.
--
-- The formula: sha256 over a version tag, prev_hash and each column as
-- "<octet length>:<text>", timestamps as UTC microseconds
-- ("YYYY-MM-DDTHH:MI:SS.USZ"), in hex.

CREATE FUNCTION audit_field(v text) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT octet_length(coalesce(v, ''))::text || ':' || coalesce(v, '') $$;

CREATE FUNCTION audit_time(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') $$;

CREATE FUNCTION audit_hash(tag text, prev text, fields text[]) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT encode(sha256(convert_to(tag || E'\n' || prev || E'\n' ||
       (SELECT string_agg(audit_field(f), '' ORDER BY i) FROM unnest(fields) WITH ORDINALITY AS u(f, i)), 'UTF8')), 'hex') $$;

-- update_event: one chain per attempt.
ALTER TABLE update_event
    ADD COLUMN prev_hash text NOT NULL DEFAULT '',
    ADD COLUMN hash      text NOT NULL DEFAULT '';
CREATE INDEX update_event_chain ON update_event (attempt_id, seq);

CREATE FUNCTION update_event_hash(e update_event) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT audit_hash('fleetsaga-event-v1', e.prev_hash,
       ARRAY[e.attempt_id::text, e.step, e.state, e.message, e.worker, audit_time(e.at)]) $$;

CREATE FUNCTION update_event_chain() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- A retried step (ON CONFLICT DO NOTHING) is not inserted: skip the
    -- lock and the hash. Rows are never deleted, so it stays a conflict.
    IF EXISTS (SELECT 1 FROM update_event WHERE attempt_id = NEW.attempt_id AND step = NEW.step) THEN
        RETURN NEW;
    END IF;
    -- One append per attempt at a time, so the row before is the one this
    -- row names; seq is drawn under the lock so seq order is chain order.
    PERFORM pg_advisory_xact_lock(hashtextextended('update_event:' || NEW.attempt_id::text, 0));
    NEW.seq := nextval(pg_get_serial_sequence('update_event', 'seq'));
    NEW.prev_hash := coalesce((SELECT hash FROM update_event WHERE attempt_id = NEW.attempt_id ORDER BY seq DESC LIMIT 1), '');
    NEW.hash := update_event_hash(NEW);
    RETURN NEW;
END $$;

-- audit_chain_rows chains the rows of tbl written before this migration,
-- chain by chain (chain_col) in seq order, with the table's <tbl>_hash.
CREATE FUNCTION audit_chain_rows(tbl text, chain_col text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    r record;
    prev text := '';
    chain text;
BEGIN
    FOR r IN EXECUTE format('SELECT seq, %I::text AS chain FROM %I ORDER BY %I, seq', chain_col, tbl, chain_col) LOOP
        IF chain IS DISTINCT FROM r.chain THEN
            prev := '';
            chain := r.chain;
        END IF;
        EXECUTE format('UPDATE %I SET prev_hash = $1 WHERE seq = $2', tbl) USING prev, r.seq;
        EXECUTE format('UPDATE %I t SET hash = %I(t) WHERE seq = $1 RETURNING hash', tbl, tbl || '_hash') INTO prev USING r.seq;
    END LOOP;
END $$;

ALTER TABLE update_event DISABLE TRIGGER update_event_no_change;
SELECT audit_chain_rows('update_event', 'attempt_id');
ALTER TABLE update_event ENABLE TRIGGER update_event_no_change;

CREATE TRIGGER update_event_chain BEFORE INSERT ON update_event
    FOR EACH ROW EXECUTE FUNCTION update_event_chain();

-- rollout_approval: who approved, proved. A gate may need several
-- distinct approvers, so the key is (rollout, stage, approver); a replay
-- key (the statement's nonce, or an ID token's digest) is used once.
ALTER TABLE rollout_approval
    ADD COLUMN seq             bigserial,
    ADD COLUMN principal       text NOT NULL DEFAULT '',  -- as the keyring names the signer
    ADD COLUMN method          text NOT NULL DEFAULT '',  -- 'ssh', 'oidc', '' (unsigned, before issue 29)
    ADD COLUMN key_fingerprint text NOT NULL DEFAULT '',  -- SSH SHA256 fingerprint, or OIDC issuer#subject
    ADD COLUMN signature       text NOT NULL DEFAULT '',  -- armored SSHSIG ('' for OIDC: the token is not kept)
    ADD COLUMN payload         text NOT NULL DEFAULT '',  -- the signed statement, exactly as signed
    ADD COLUMN replay_key      text NOT NULL DEFAULT '',
    ADD COLUMN prev_hash       text NOT NULL DEFAULT '',
    ADD COLUMN hash            text NOT NULL DEFAULT '';
ALTER TABLE rollout_approval DROP CONSTRAINT rollout_approval_pkey;
ALTER TABLE rollout_approval ADD PRIMARY KEY (rollout_id, stage, approved_by);
CREATE UNIQUE INDEX rollout_approval_replay_once ON rollout_approval (replay_key) WHERE replay_key <> '';
CREATE INDEX rollout_approval_chain ON rollout_approval (rollout_id, seq);

CREATE FUNCTION rollout_approval_hash(a rollout_approval) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT audit_hash('fleetsaga-approval-v1', a.prev_hash,
       ARRAY[a.rollout_id, a.stage, a.approved_by, a.reason, a.plan_digest, audit_time(a.at), a.principal,
             a.method, a.key_fingerprint, a.signature, a.payload, a.replay_key]) $$;

CREATE FUNCTION rollout_approval_chain() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('rollout_approval:' || NEW.rollout_id, 0));
    NEW.seq := nextval(pg_get_serial_sequence('rollout_approval', 'seq'));
    NEW.prev_hash := coalesce((SELECT hash FROM rollout_approval WHERE rollout_id = NEW.rollout_id ORDER BY seq DESC LIMIT 1), '');
    NEW.hash := rollout_approval_hash(NEW);
    RETURN NEW;
END $$;

SELECT audit_chain_rows('rollout_approval', 'rollout_id');
DROP FUNCTION audit_chain_rows(text, text);

CREATE TRIGGER rollout_approval_chain BEFORE INSERT ON rollout_approval
    FOR EACH ROW EXECUTE FUNCTION rollout_approval_chain();

-- Approvals are append-only too: a bug cannot rewrite who approved.
CREATE FUNCTION rollout_approval_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'rollout_approval is append-only';
END $$;
CREATE TRIGGER rollout_approval_no_change BEFORE UPDATE OR DELETE ON rollout_approval
    FOR EACH ROW EXECUTE FUNCTION rollout_approval_append_only();
