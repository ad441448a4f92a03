-- Chain heads that say what they follow, and an exposed mark no one can
-- take back unseen.
--
-- audit_head.prev_head_seq: the seq of the row the worker had signed last
-- in the chain when it signed this head (0: the head's row starts the
-- chain; -1: the chain was signed as found, at a worker's start). It is
-- part of the signed message (ledger.HeadMessageAfter, tag
-- fleetsaga-audit-head-v2), so `starter audit verify --audit-public-key`
-- requires the head at that seq to be there too: a chain whose first rows
-- are nobody's is named, and so are removed heads before a signed one.
-- NULL: a head signed before this migration (ledger.HeadMessage, tag
-- fleetsaga-audit-head-v1), verified as it was signed, with no continuity.
ALTER TABLE audit_head ADD COLUMN prev_head_seq bigint;

-- exposed_statement is append-only, TRUNCATE included. Its owner can
-- still disable the triggers, so each mark is also written as a chained,
-- signed rollout_approval row of method 'exposed' (ledger.RecordExposed),
-- which no gate counts and whose removal audit verify names.
CREATE FUNCTION exposed_statement_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'exposed_statement is append-only';
END $$;
CREATE TRIGGER exposed_statement_no_change BEFORE UPDATE OR DELETE ON exposed_statement
    FOR EACH ROW EXECUTE FUNCTION exposed_statement_append_only();
CREATE TRIGGER exposed_statement_no_truncate BEFORE TRUNCATE ON exposed_statement
    FOR EACH STATEMENT EXECUTE FUNCTION exposed_statement_append_only();
