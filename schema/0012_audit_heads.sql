-- Chain heads signed by the worker. The hashes of schema/0009_audit_chain.sql
-- are computed by the database, so its owner can recompute them after an
-- edit; a head signed with the worker's ed25519 key (worker configuration,
-- never in the database) names a row (seq and hash) the worker appended, in
-- the transaction that appended it, when the row before it is one the
-- worker signed. `starter audit verify --audit-public-key` requires every
-- signed head to be in today's chains and every row after a chain's first
-- signed one to be signed (ledger/audit_heads.go, ledger/audit_against.go).

CREATE TABLE audit_head (
    seq             bigserial PRIMARY KEY,
    tbl             text NOT NULL,         -- 'update_event' or 'rollout_approval'
    chain           text NOT NULL,         -- 'attempt <uuid>' or 'rollout <id>'
    head_seq        bigint NOT NULL,
    head_hash       text NOT NULL,
    key_fingerprint text NOT NULL,         -- SSH SHA256 fingerprint of the worker's public key
    signature       text NOT NULL,         -- base64 ed25519 signature over the head (ledger.HeadMessage)
    at              timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tbl, chain, head_seq, key_fingerprint)
);
CREATE INDEX audit_head_chain ON audit_head (tbl, chain, head_seq);

CREATE FUNCTION audit_head_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_head is append-only';
END $$;
CREATE TRIGGER audit_head_no_change BEFORE UPDATE OR DELETE ON audit_head
    FOR EACH ROW EXECUTE FUNCTION audit_head_append_only();
