package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// AgentClaimTarget names one (server, agent) claim in a TargetBusy error.
func AgentClaimTarget(server uuid.UUID, agent string) string {
	return "server/" + server.String() + "/agent/" + agent
}

// ClaimAgents claims each of agents on every server of the rollout's plan
// still to do, for the rollout's attempt (its ID is the rollout ID), until
// that attempt ends. Claiming again is a no-op. A claim held by another
// active rollout is *ErrTargetBusy naming that rollout's attempt.
func (s *Store) ClaimAgents(ctx context.Context, rollout uuid.UUID, agents []string) error {
	_, err := s.db.ExecContext(ctx, `
		INSERT INTO agent_claim (attempt_id, server_uuid, agent)
		SELECT $1, r.server_uuid, a.name
		  FROM agent_rollout_server r CROSS JOIN unnest($2::text[]) AS a(name)
		 WHERE r.rollout_id = $1 AND r.state IN ('pending', 'running')
		   AND EXISTS (SELECT 1 FROM update_attempt WHERE id = $1 AND state IN ('pending', 'running'))
		 ORDER BY r.server_uuid, a.name -- one order for every rollout: no deadlock between two claiming at once
		ON CONFLICT (attempt_id, server_uuid, agent) DO NOTHING`, rollout, pq.Array(agents))
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) || pqErr.Code != "23505" {
		if err != nil {
			return fmt.Errorf("ledger: claim agents: %w", err)
		}
		return nil
	}
	busy := &ErrTargetBusy{Target: "agents of rollout " + rollout.String()}
	var server uuid.UUID
	var agent string
	err = s.db.QueryRowContext(ctx, `
		SELECT c.server_uuid, c.agent, u.id, u.update_id, u.workflow_id, u.run_id
		  FROM agent_claim c
		  JOIN update_attempt u ON u.id = c.attempt_id
		  JOIN agent_rollout_server r ON r.rollout_id = $1 AND r.server_uuid = c.server_uuid
		 WHERE c.released_at IS NULL AND c.attempt_id <> $1 AND c.agent = ANY($2::text[])
		 LIMIT 1`, rollout, pq.Array(agents)).Scan(&server, &agent, &busy.ActiveID, &busy.UpdateID, &busy.WorkflowID, &busy.RunID)
	if err == nil {
		busy.Target = AgentClaimTarget(server, agent)
	}
	return busy
}

// ActiveAgentClaims counts the (server, agent) claims held by rollouts.
func (s *Store) ActiveAgentClaims(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM agent_claim WHERE released_at IS NULL`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("ledger: agent claims: %w", err)
	}
	return n, nil
}
