-- Agent rollouts: the plan of one AgentInstall (which servers, in which
-- order) and each server's result. The workflow reads the plan in pages, so
-- a rollout over 10,000 servers never carries its server list in Temporal
-- history.
CREATE TABLE agent_rollout_server (
    rollout_id  uuid        NOT NULL,   -- the rollout's parent attempt ID
    seq         integer     NOT NULL CHECK (seq >= 1),
    server_uuid uuid        NOT NULL,
    hostname    text        NOT NULL,
    -- pending: to do; running: a child works on it; done/failed: ended;
    -- skipped: never touched (offline, not set up); not_started: the
    -- rollout stopped (failure budget, cancel) before reaching it.
    state       text        NOT NULL CHECK (state IN ('pending', 'running', 'done', 'failed', 'skipped', 'not_started')),
    outcome     text        NOT NULL DEFAULT '',
    reason      text        NOT NULL DEFAULT '',
    attempt_id  uuid,
    duration_ms bigint,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (rollout_id, server_uuid),
    UNIQUE (rollout_id, seq)
);

CREATE INDEX agent_rollout_server_by_state ON agent_rollout_server (rollout_id, state, seq);
