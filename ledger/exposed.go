package ledger

import (
	"context"
	"fmt"
)

// RecordExposed marks a statement whose ID token was seen in plain text
// (key: approval.ExposedKey), for the rollout and ledger stage it came
// to. Recorded once; a second time is a no-op.
func (s *Store) RecordExposed(ctx context.Context, key, rollout, stage string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO exposed_statement (statement_key, rollout_id, stage) VALUES ($1, $2, $3)
		ON CONFLICT (statement_key) DO NOTHING`, key, rollout, stage)
	if err != nil {
		return fmt.Errorf("ledger: record exposed statement: %w", err)
	}
	return nil
}

// Exposed says whether RecordExposed marked key.
func (s *Store) Exposed(ctx context.Context, key string) (bool, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM exposed_statement WHERE statement_key = $1`, key).Scan(&n); err != nil {
		return false, fmt.Errorf("ledger: exposed statement: %w", err)
	}
	return n > 0, nil
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
