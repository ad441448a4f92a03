-- The plan an approval binds: the digest of the rows the gate showed
-- ('' for approvals given before gates planned their stages).
ALTER TABLE rollout_approval ADD COLUMN IF NOT EXISTS plan_digest text NOT NULL DEFAULT '';
