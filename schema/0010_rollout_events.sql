-- What a rollout decided on its own (issue 30): each health gate round
-- with its verdict and reason, an abort at a gate or a failure threshold,
-- a pause on inconclusive results, a wait for a window or a freeze.
-- seq is the rollout's own count (deterministic in the workflow), so a
-- retried write is one row. A run an operator reset keeps the original
-- run ID and counts again from its reset point: where the run before it
-- recorded a decision, that row stands (ledger.RecordRolloutEvent returns
-- it) and a different decision is appended after the last row.
CREATE TABLE rollout_event (
    rollout_id text        NOT NULL,  -- the rollout's workflow ID
    run_id     text        NOT NULL,  -- the run's original run ID (a reset keeps it)
    seq        integer     NOT NULL,
    stage      text        NOT NULL,
    kind       text        NOT NULL,  -- gate-round, gate-passed, aborted, paused, window-wait, …
    verdict    text        NOT NULL DEFAULT '',
    reason     text        NOT NULL,
    detail     jsonb,                 -- a round's per-check results
    shadow     boolean     NOT NULL DEFAULT false,
    at         timestamptz NOT NULL,
    PRIMARY KEY (rollout_id, run_id, seq)
);
