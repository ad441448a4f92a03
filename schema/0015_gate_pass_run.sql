-- A gate pass names the run that opened the gate (its current run ID,
-- which a reset changes): a reset run whose gate would open again on the
-- approvals a pass by another run spent is refused (Spent), and an
-- approval that arrives after this run's gate opened is not recorded.
-- NULL: recorded before this column; no run can claim it.
ALTER TABLE rollout_gate_pass ADD COLUMN run_id text;

-- Passes are append-only: deleting one would make its spent approvals
-- count again at a reset gate.
CREATE FUNCTION rollout_gate_pass_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'rollout_gate_pass is append-only';
END $$;
CREATE TRIGGER rollout_gate_pass_no_change BEFORE UPDATE OR DELETE ON rollout_gate_pass
    FOR EACH ROW EXECUTE FUNCTION rollout_gate_pass_append_only();
CREATE TRIGGER rollout_gate_pass_no_truncate BEFORE TRUNCATE ON rollout_gate_pass
    FOR EACH STATEMENT EXECUTE FUNCTION rollout_gate_pass_append_only();
