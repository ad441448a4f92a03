package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// RolloutEvent is one decision a rollout took on its own (issue 30): a
// gate round, an abort, a pause, a wait for a window.
type RolloutEvent struct {
	Rollout string          `json:"rollout"`
	RunID   string          `json:"runId"`
	Seq     int             `json:"seq"`
	Stage   string          `json:"stage"`
	Kind    string          `json:"kind"`
	Verdict string          `json:"verdict,omitempty"`
	Reason  string          `json:"reason"`
	Detail  json.RawMessage `json:"detail,omitempty"`
	Shadow  bool            `json:"shadow,omitempty"`
	At      time.Time       `json:"at"`
}

// RecordRolloutEvent stores e once (a retried write changes nothing).
func (s *Store) RecordRolloutEvent(ctx context.Context, e RolloutEvent) error {
	var detail any
	if len(e.Detail) > 0 {
		detail = string(e.Detail)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO rollout_event (rollout_id, run_id, seq, stage, kind, verdict, reason, detail, shadow, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
		e.Rollout, e.RunID, e.Seq, e.Stage, e.Kind, e.Verdict, e.Reason, detail, e.Shadow, e.At)
	if err != nil {
		return fmt.Errorf("ledger: record rollout event: %w", err)
	}
	return nil
}

// RolloutEvents lists a rollout's events, every run's, in order.
func (s *Store) RolloutEvents(ctx context.Context, rollout string) ([]RolloutEvent, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT rollout_id, run_id, seq, stage, kind, verdict, reason, coalesce(detail::text, ''), shadow, at
		FROM rollout_event WHERE rollout_id = $1 ORDER BY at, seq`, rollout)
	if err != nil {
		return nil, fmt.Errorf("ledger: rollout events: %w", err)
	}
	defer rows.Close()
	var out []RolloutEvent
	for rows.Next() {
		var e RolloutEvent
		var detail string
		if err := rows.Scan(&e.Rollout, &e.RunID, &e.Seq, &e.Stage, &e.Kind, &e.Verdict, &e.Reason, &detail, &e.Shadow, &e.At); err != nil {
			return nil, fmt.Errorf("ledger: rollout events: %w", err)
		}
		if detail != "" {
			e.Detail = json.RawMessage(detail)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
