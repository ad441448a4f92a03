package ledger

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
)

// ErrSpent is a gate pass refused: another run of the rollout (one an
// operator reset from, or one before it) already opened the gate on the
// same approvals, or this run's gate already opened before an approval
// arrived. Either way the approvals approved a pass that ran.
var ErrSpent = errors.New("ledger: the gate's approvals were spent by a pass that ran")

// RecordGatePass records that a rollout's gate (stage, its ledger stage
// key) opened in run (the current run ID) on the approvals recorded for
// it so far, and returns the seq of the last of them: those are spent (0:
// none recorded). The same run's retry changes nothing; a pass through
// the same approvals by another run is ErrSpent.
func (s *Store) RecordGatePass(ctx context.Context, rollout, stage, run string) (int64, error) {
	var through int64
	err := s.withGateLock(ctx, rollout, stage, func(q *sql.Conn) error {
		if err := q.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM rollout_approval WHERE rollout_id = $1 AND stage = $2`,
			rollout, stage).Scan(&through); err != nil {
			return err
		}
		var by sql.NullString
		err := q.QueryRowContext(ctx, `SELECT run_id FROM rollout_gate_pass WHERE rollout_id = $1 AND stage = $2 AND through_seq = $3`,
			rollout, stage, through).Scan(&by)
		switch {
		case err == nil && by.Valid && by.String == run:
			return nil // a retry
		case err == nil:
			return ErrSpent
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		_, err = q.ExecContext(ctx, `INSERT INTO rollout_gate_pass (rollout_id, stage, through_seq, run_id) VALUES ($1, $2, $3, $4)`,
			rollout, stage, through, run)
		return err
	})
	if errors.Is(err, ErrSpent) {
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("ledger: record gate pass: %w", err)
	}
	return through, nil
}

// RecordGateApproval records a gate's approval (a.Stage, its ledger stage
// key) as RecordApproval does, unless run (the current run ID) already
// passed the gate: an approval that arrives once the gate opened would
// otherwise stay unspent and open the gate of a later reset. Such an
// approval is ErrSpent: refused before the write when the pass is seen
// first; when the pass was recorded while it was written, the approval is
// spent by a pass of run through it (under the lock RecordGatePass takes,
// so every approval is either spent by the pass that opened the gate, or
// refused and spent).
func (s *Store) RecordGateApproval(ctx context.Context, a Approval, run string) error {
	passed, err := s.passedBy(ctx, s.db, a.Rollout, a.Stage, run)
	if err != nil {
		return err
	}
	if passed.Valid {
		return ErrSpent
	}
	if err := s.RecordApproval(ctx, a); err != nil {
		return err
	}
	return s.withGateLock(ctx, a.Rollout, a.Stage, func(q *sql.Conn) error {
		passed, err := s.passedBy(ctx, q, a.Rollout, a.Stage, run)
		if err != nil || !passed.Valid {
			return err
		}
		var mine int64
		if err := q.QueryRowContext(ctx, `SELECT seq FROM rollout_approval WHERE rollout_id = $1 AND stage = $2 AND plan_digest = $3
			AND approved_by = $4 AND replay_key = $5 ORDER BY seq DESC LIMIT 1`, a.Rollout, a.Stage, a.PlanDigest, a.By, a.ReplayKey).Scan(&mine); err != nil {
			return fmt.Errorf("ledger: the approval just recorded: %w", err)
		}
		if mine <= passed.Int64 {
			return nil // the pass spent it
		}
		if _, err := q.ExecContext(ctx, `INSERT INTO rollout_gate_pass (rollout_id, stage, through_seq, run_id) VALUES ($1, $2, $3, $4)
			ON CONFLICT DO NOTHING`, a.Rollout, a.Stage, mine, run); err != nil {
			return fmt.Errorf("ledger: spend a late approval: %w", err)
		}
		return ErrSpent
	})
}

// passedBy is the seq through which run passed the gate (not Valid: it
// did not).
func (s *Store) passedBy(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, rollout, stage, run string) (sql.NullInt64, error) {
	var through sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT max(through_seq) FROM rollout_gate_pass WHERE rollout_id = $1 AND stage = $2 AND run_id = $3`,
		rollout, stage, run).Scan(&through)
	if err != nil {
		return through, fmt.Errorf("ledger: gate pass: %w", err)
	}
	return through, nil
}

// GatePassedThrough is the seq of the last approval a pass of the gate
// spent (0: the gate never opened): an approval of that gate counts only
// with a greater seq.
func (s *Store) GatePassedThrough(ctx context.Context, rollout, stage string) (int64, error) {
	var through int64
	err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(through_seq), 0) FROM rollout_gate_pass WHERE rollout_id = $1 AND stage = $2`,
		rollout, stage).Scan(&through)
	if err != nil {
		return 0, fmt.Errorf("ledger: gate pass: %w", err)
	}
	return through, nil
}

// withGateLock runs fn holding a session advisory lock named by the
// gate, on a connection of its own: each statement fn runs after taking
// it sees what the other holder committed. fn uses that connection
// alone: holding one while waiting for another could exhaust the pool. A
// connection whose unlock failed is closed, which releases the lock.
func (s *Store) withGateLock(ctx context.Context, rollout, stage string, fn func(*sql.Conn) error) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	const key = `hashtextextended('rollout_gate_pass/' || $1 || '/' || $2, 0)`
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(`+key+`)`, rollout, stage); err != nil {
		return err
	}
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(`+key+`)`, rollout, stage); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	return fn(conn)
}
