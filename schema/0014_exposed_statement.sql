-- A statement whose ID token was sent in plain text (a start, in
-- Temporal's history for anyone who may read it): its key is the
-- statement's digest, the nonce that token binds, so no sealed copy of
-- that token verifies later (approval.Keyring.Check: Replayed). The
-- statement itself is public; the token is never stored.
CREATE TABLE exposed_statement (
    statement_key text PRIMARY KEY,
    rollout_id    text NOT NULL,
    stage         text NOT NULL,
    at            timestamptz NOT NULL DEFAULT now()
);
