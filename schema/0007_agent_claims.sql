-- Agent claims (issue #14, defect 12). An agent rollout's ledger target is
-- its set of agent names (dc/cn-agent, dc/all-agents), so two rollouts that
-- share an agent have different targets. Each rollout therefore claims
-- every (server, agent) of its plan for its whole life: a second rollout
-- that shares an agent on a server is refused, so no server gets one agent
-- installed with two images. Rollouts of different agents may overlap;
-- their installs on one server are serialised anyway by the per-server
-- attempt (target server/<uuid>: one cn-agent task at a time, core agents
-- alone, DOMAIN.md §F).
CREATE TABLE agent_claim (
    attempt_id  uuid        NOT NULL REFERENCES update_attempt (id),   -- the rollout's attempt
    server_uuid uuid        NOT NULL,
    agent       text        NOT NULL,
    claimed_at  timestamptz NOT NULL DEFAULT now(),
    released_at timestamptz,
    PRIMARY KEY (attempt_id, server_uuid, agent)
);

-- One active claim per server and agent, whatever Temporal does.
CREATE UNIQUE INDEX agent_claim_one_active
    ON agent_claim (server_uuid, agent) WHERE released_at IS NULL;

-- Claims end with their rollout's attempt, however it ends (finished by the
-- workflow, or released as abandoned after a terminate).
CREATE FUNCTION agent_claim_release() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agent_claim SET released_at = now() WHERE attempt_id = NEW.id AND released_at IS NULL;
    RETURN NEW;
END $$;

CREATE TRIGGER agent_claim_release_on_end AFTER UPDATE OF state ON update_attempt
    FOR EACH ROW WHEN (NEW.state IN ('completed', 'failed', 'cancelled'))
    EXECUTE FUNCTION agent_claim_release();
