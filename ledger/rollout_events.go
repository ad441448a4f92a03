package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"
)

// RolloutEvent is one decision a rollout took on its own: a
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

// RecordRolloutEvent stores e once (a retried write changes nothing) and
// returns the row the ledger holds under e's key: e, or the one a run
// before an operator's reset wrote there (a reset run keeps the original
// run ID and replays the count, so it meets the keys of what its
// predecessor decided after the reset point).
func (s *Store) RecordRolloutEvent(ctx context.Context, e RolloutEvent) (RolloutEvent, error) {
	var detail any
	if len(e.Detail) > 0 {
		detail = string(e.Detail)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO rollout_event (rollout_id, run_id, seq, stage, kind, verdict, reason, detail, shadow, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
		e.Rollout, e.RunID, e.Seq, e.Stage, e.Kind, e.Verdict, e.Reason, detail, e.Shadow, e.At)
	if err != nil {
		return RolloutEvent{}, fmt.Errorf("ledger: record rollout event: %w", err)
	}
	got, err := s.scanRolloutEvents(ctx, `WHERE rollout_id = $1 AND run_id = $2 AND seq = $3`, e.Rollout, e.RunID, e.Seq)
	if err != nil || len(got) == 0 {
		return RolloutEvent{}, fmt.Errorf("ledger: record rollout event: read it back: %w (%d rows)", err, len(got))
	}
	return got[0], nil
}

// AppendRolloutEvent stores e after every event recorded for its run, once
// (a retry finds the row it wrote: same stage, kind, reason and time), and
// returns it with the seq it got: a reset run that decided differently
// from its predecessor keeps both decisions.
func (s *Store) AppendRolloutEvent(ctx context.Context, e RolloutEvent) (RolloutEvent, error) {
	var detail any
	if len(e.Detail) > 0 {
		detail = string(e.Detail)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO rollout_event (rollout_id, run_id, seq, stage, kind, verdict, reason, detail, shadow, at)
		SELECT $1, $2, next, $3, $4, $5, $6, $7, $8, $9
		FROM (SELECT coalesce(max(seq), 0) + 1 AS next FROM rollout_event WHERE rollout_id = $1 AND run_id = $2) AS last
		WHERE NOT EXISTS (SELECT 1 FROM rollout_event WHERE rollout_id = $1 AND run_id = $2 AND seq > $10
			AND stage = $3 AND kind = $4 AND reason = $6 AND at = $9)`,
		e.Rollout, e.RunID, e.Stage, e.Kind, e.Verdict, e.Reason, detail, e.Shadow, e.At, e.Seq)
	if err != nil {
		return RolloutEvent{}, fmt.Errorf("ledger: append rollout event: %w", err)
	}
	got, err := s.scanRolloutEvents(ctx, `WHERE rollout_id = $1 AND run_id = $2 AND seq > $3 AND stage = $4 AND kind = $5 AND reason = $6 AND at = $7`,
		e.Rollout, e.RunID, e.Seq, e.Stage, e.Kind, e.Reason, e.At)
	if err != nil || len(got) == 0 {
		return RolloutEvent{}, fmt.Errorf("ledger: append rollout event: read it back: %w (%d rows)", err, len(got))
	}
	return got[0], nil
}

// RolloutEventsOfStage lists the events one run chain (runID, the
// original run ID) recorded in stage whose reason starts with one of
// prefixes, in order: how a reset run finds the gate round it is about to
// judge wherever its predecessor recorded it.
func (s *Store) RolloutEventsOfStage(ctx context.Context, rollout, runID, stage string, prefixes ...string) ([]RolloutEvent, error) {
	likes := make([]string, len(prefixes))
	for i, p := range prefixes {
		likes[i] = likePrefix(p)
	}
	return s.scanRolloutEvents(ctx, `WHERE rollout_id = $1 AND run_id = $2 AND stage = $3 AND reason LIKE ANY ($4)`,
		rollout, runID, stage, pq.Array(likes))
}

// likePrefix is the LIKE pattern of the strings that start with p.
func likePrefix(p string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(p) + "%"
}

// RolloutEvents lists a rollout's events, every run's, in order.
func (s *Store) RolloutEvents(ctx context.Context, rollout string) ([]RolloutEvent, error) {
	return s.scanRolloutEvents(ctx, `WHERE rollout_id = $1`, rollout)
}

func (s *Store) scanRolloutEvents(ctx context.Context, where string, args ...any) ([]RolloutEvent, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT rollout_id, run_id, seq, stage, kind, verdict, reason, coalesce(detail::text, ''), shadow, at
		FROM rollout_event `+where+` ORDER BY at, seq`, args...)
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
