-- Approvals given at a rollout's gates: who let which stage start, and why.
CREATE TABLE rollout_approval (
    rollout_id text        NOT NULL,   -- the rollout's workflow ID
    stage      text        NOT NULL,
    approved_by text       NOT NULL,
    reason     text        NOT NULL,
    at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (rollout_id, stage)
);
