package ledger

import (
	"context"
	"errors"
	"fmt"
)

// MethodExposed is the Method of a rollout_approval row that marks a
// statement exposed (RecordExposed): no gate counts it (its stage is
// ExposedStagePrefix and the stage it came to, which no gate's is), audit
// verify checks its shape, and as a row of the rollout's chain, signed
// by the worker's head, its removal is named like any row's.
const MethodExposed = "exposed"

// ExposedStagePrefix starts the stage of an exposed mark's row.
const ExposedStagePrefix = "exposed:"

// RecordExposed marks a statement whose ID token was seen in plain text
// (key: approval.ExposedKey), for the rollout and ledger stage it came
// to. Recorded once; a second time is a no-op. The mark is written twice:
// in exposed_statement (append-only, schema/0017_audit_head_continuity.sql)
// and as a chained rollout_approval row (MethodExposed), so the database's
// owner, who can disable the triggers, cannot delete it unseen by audit
// verify (within what audit verify sees: docs/GAPS.md).
func (s *Store) RecordExposed(ctx context.Context, key, rollout, stage string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO exposed_statement (statement_key, rollout_id, stage) VALUES ($1, $2, $3)
		ON CONFLICT (statement_key) DO NOTHING`, key, rollout, stage)
	if err != nil {
		return fmt.Errorf("ledger: record exposed statement: %w", err)
	}
	var rows int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM rollout_approval WHERE replay_key = $1`, key).Scan(&rows); err != nil {
		return fmt.Errorf("ledger: record exposed statement: %w", err)
	}
	if rows > 0 {
		// Marked already (a retry), or a signed approval chose this key as
		// its nonce: that row is chained too, and Exposed counts it.
		return nil
	}
	err = s.RecordApproval(ctx, Approval{Rollout: rollout, Stage: ExposedStagePrefix + stage, By: MethodExposed,
		Reason: "an ID token for this statement was sent in plain text: no sealed copy of it counts", Method: MethodExposed, ReplayKey: key})
	if errors.Is(err, ErrReplayed) {
		return nil // written meanwhile, as above
	}
	return err
}

// Exposed says whether RecordExposed marked key: either of its marks
// holds it. Any chained row holding key counts, whatever its method: an
// older approval whose nonce took the key stood in for the chained mark
// (SSH nonces may no longer take it: approval.ExposedKey).
func (s *Store) Exposed(ctx context.Context, key string) (bool, error) {
	var exposed bool
	if err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM exposed_statement WHERE statement_key = $1)
		OR EXISTS (SELECT 1 FROM rollout_approval WHERE replay_key = $1)`, key).Scan(&exposed); err != nil {
		return false, fmt.Errorf("ledger: exposed statement: %w", err)
	}
	return exposed, nil
}

// ApprovalByPayload returns the approval recorded for rollout at stage
// (its ledger stage) whose statement is exactly payload, or nil.
func (s *Store) ApprovalByPayload(ctx context.Context, rollout, stage, payload string) (*Approval, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+approvalColumns+` FROM rollout_approval
		WHERE rollout_id = $1 AND stage = $2 AND payload = $3 ORDER BY seq LIMIT 1`, rollout, stage, payload)
	if err != nil {
		return nil, fmt.Errorf("ledger: approval by statement: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, rows.Err()
	}
	a, err := scanApproval(rows)
	if err != nil {
		return nil, err
	}
	return &a, nil
}
