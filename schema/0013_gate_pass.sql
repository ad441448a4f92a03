-- A gate's approvals approve one pass of its stage. When a rollout's
-- gate opens, it records here the last rollout_approval row of that gate
-- (seq): those approvals are spent. A run an operator resets to before
-- the gate keeps the original run ID, and so the gate's ledger stage, but
-- counts only the approvals recorded after the last pass.
CREATE TABLE rollout_gate_pass (
    rollout_id  text        NOT NULL,  -- the rollout's workflow ID
    stage       text        NOT NULL,  -- the gate's ledger stage, "<stage>@run:<original run ID>"
    through_seq bigint      NOT NULL,  -- rollout_approval.seq of the gate's last approval when it opened
    at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (rollout_id, stage, through_seq)
);
