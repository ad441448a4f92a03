package ledger

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// Agent rollout server states (table agent_rollout_server).
const (
	AgentServerPending    = "pending"
	AgentServerRunning    = "running"
	AgentServerDone       = "done"
	AgentServerFailed     = "failed"
	AgentServerSkipped    = "skipped"
	AgentServerNotStarted = "not_started"
)

// AgentServer is one server of an agent rollout's plan.
type AgentServer struct {
	Seq        int       `json:"seq"`
	ServerUUID uuid.UUID `json:"serverUuid"`
	Hostname   string    `json:"hostname"`
	State      string    `json:"state"`
	Outcome    string    `json:"outcome,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	AttemptID  uuid.UUID `json:"attemptId,omitzero"`
	DurationMS int64     `json:"durationMs,omitempty"`
}

// InsertAgentPlan writes a rollout's plan. It is idempotent: rows already
// written (same rollout and server) are kept as they are.
func (s *Store) InsertAgentPlan(ctx context.Context, rollout uuid.UUID, rows []AgentServer) error {
	const batch = 1000
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ledger: agent plan: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck
	for start := 0; start < len(rows); start += batch {
		part := rows[start:min(start+batch, len(rows))]
		var sb strings.Builder
		args := make([]any, 0, 6*len(part))
		sb.WriteString(`INSERT INTO agent_rollout_server (rollout_id, seq, server_uuid, hostname, state, reason) VALUES `)
		for i, r := range part {
			if i > 0 {
				sb.WriteString(",")
			}
			n := len(args)
			fmt.Fprintf(&sb, "($%d,$%d,$%d,$%d,$%d,$%d)", n+1, n+2, n+3, n+4, n+5, n+6)
			args = append(args, rollout, r.Seq, r.ServerUUID, r.Hostname, r.State, r.Reason)
		}
		sb.WriteString(` ON CONFLICT DO NOTHING`)
		if _, err := tx.ExecContext(ctx, sb.String(), args...); err != nil {
			return fmt.Errorf("ledger: agent plan: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ledger: agent plan: %w", err)
	}
	return nil
}

// PendingAgentServers returns up to limit pending servers with seq > after,
// in plan order.
func (s *Store) PendingAgentServers(ctx context.Context, rollout uuid.UUID, after, limit int) ([]AgentServer, error) {
	return s.queryAgentServers(ctx, `WHERE rollout_id = $1 AND state = 'pending' AND seq > $2 ORDER BY seq LIMIT $3`, rollout, after, limit)
}

// AgentServers returns a rollout's servers in plan order, optionally only
// those in state (""= all), at most limit (0 = all).
func (s *Store) AgentServers(ctx context.Context, rollout uuid.UUID, state string, limit int) ([]AgentServer, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	return s.queryAgentServers(ctx, `WHERE rollout_id = $1 AND ($2 = '' OR state = $2) ORDER BY seq LIMIT $3`, rollout, state, limit)
}

// AgentServersBySeq returns a rollout's servers with the given plan
// sequence numbers (the ones in flight: a handful of a large plan).
func (s *Store) AgentServersBySeq(ctx context.Context, rollout uuid.UUID, seqs []int) ([]AgentServer, error) {
	return s.queryAgentServers(ctx, `WHERE rollout_id = $1 AND seq = ANY($2) ORDER BY seq`, rollout, pq.Array(seqs))
}

func (s *Store) queryAgentServers(ctx context.Context, where string, args ...any) ([]AgentServer, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, server_uuid, hostname, state, outcome, reason,
		attempt_id, coalesce(duration_ms, 0) FROM agent_rollout_server `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: agent servers: %w", err)
	}
	defer rows.Close()
	var out []AgentServer
	for rows.Next() {
		var r AgentServer
		var attempt uuid.NullUUID
		if err := rows.Scan(&r.Seq, &r.ServerUUID, &r.Hostname, &r.State, &r.Outcome, &r.Reason, &attempt, &r.DurationMS); err != nil {
			return nil, err
		}
		r.AttemptID = attempt.UUID
		out = append(out, r)
	}
	return out, rows.Err()
}

// SetAgentServer records a server's state in a rollout. An ended server
// (done, failed, skipped) keeps its first ending.
func (s *Store) SetAgentServer(ctx context.Context, rollout uuid.UUID, r AgentServer) error {
	var attempt any
	if r.AttemptID != uuid.Nil {
		attempt = r.AttemptID
	}
	res, err := s.db.ExecContext(ctx, `UPDATE agent_rollout_server
		   SET state = $3, outcome = $4, reason = $5, attempt_id = coalesce($6, attempt_id),
		       duration_ms = CASE WHEN $7 > 0 THEN $7 ELSE duration_ms END, updated_at = now()
		 WHERE rollout_id = $1 AND server_uuid = $2 AND state IN ('pending', 'running')`,
		rollout, r.ServerUUID, r.State, r.Outcome, r.Reason, attempt, r.DurationMS)
	if err != nil {
		return fmt.Errorf("ledger: set agent server: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var exists bool
		if err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM agent_rollout_server
			WHERE rollout_id = $1 AND server_uuid = $2)`, rollout, r.ServerUUID).Scan(&exists); err != nil {
			return fmt.Errorf("ledger: set agent server: %w", err)
		}
		if !exists {
			return fmt.Errorf("ledger: server %s is not in agent rollout %s", r.ServerUUID, rollout)
		}
	}
	return nil
}

// StopAgentRollout marks every still-pending server not_started (the
// rollout stopped before reaching them) and returns how many.
func (s *Store) StopAgentRollout(ctx context.Context, rollout uuid.UUID, reason string) (int, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE agent_rollout_server SET state = 'not_started', reason = $2, updated_at = now()
		WHERE rollout_id = $1 AND state = 'pending'`, rollout, reason)
	if err != nil {
		return 0, fmt.Errorf("ledger: stop agent rollout: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// AgentRolloutCounts counts a rollout's servers by state.
func (s *Store) AgentRolloutCounts(ctx context.Context, rollout uuid.UUID) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT state, count(*) FROM agent_rollout_server WHERE rollout_id = $1 GROUP BY state`, rollout)
	if err != nil {
		return nil, fmt.Errorf("ledger: agent rollout counts: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[st] = n
	}
	return out, rows.Err()
}
