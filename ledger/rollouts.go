package ledger

import (
	"context"
	"fmt"
	"time"
)

// Approval is one approval given at a rollout's gate.
type Approval struct {
	Rollout string `json:"rollout"`
	Stage   string `json:"stage"`
	By      string `json:"by"`
	Reason  string `json:"reason"`
	// PlanDigest is the digest of the plan the gate showed and the
	// approval bound ("" for rollouts that did not plan at their gates).
	PlanDigest string    `json:"planDigest,omitempty"`
	At         time.Time `json:"at"`
}

// RecordApproval stores an approval; the first one for a stage stands.
func (s *Store) RecordApproval(ctx context.Context, a Approval) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO rollout_approval (rollout_id, stage, approved_by, reason, plan_digest)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (rollout_id, stage) DO NOTHING`, a.Rollout, a.Stage, a.By, a.Reason, a.PlanDigest)
	if err != nil {
		return fmt.Errorf("ledger: record approval: %w", err)
	}
	return nil
}

// Approvals lists a rollout's approvals in order.
func (s *Store) Approvals(ctx context.Context, rollout string) ([]Approval, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT rollout_id, stage, approved_by, reason, plan_digest, at
		FROM rollout_approval WHERE rollout_id = $1 ORDER BY at`, rollout)
	if err != nil {
		return nil, fmt.Errorf("ledger: approvals: %w", err)
	}
	defer rows.Close()
	var out []Approval
	for rows.Next() {
		var a Approval
		if err := rows.Scan(&a.Rollout, &a.Stage, &a.By, &a.Reason, &a.PlanDigest, &a.At); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}
