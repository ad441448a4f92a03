-- An approver may approve a gate again when it shows a new plan: each
-- approval the workflow counts must be a row here. The key was
-- (rollout, stage, approver), which dropped the second approval silently.
-- A signed approval is one row per replay key (rollout_approval_replay_once);
-- an unsigned one, which has none, one row per stage, plan and typed name
-- (so a retried activity does not record it twice).
ALTER TABLE rollout_approval DROP CONSTRAINT rollout_approval_pkey;
ALTER TABLE rollout_approval ADD PRIMARY KEY (seq);
CREATE UNIQUE INDEX rollout_approval_unsigned_once ON rollout_approval (rollout_id, stage, plan_digest, approved_by)
    WHERE replay_key = '';
