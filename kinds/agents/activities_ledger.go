package agents

import (
	"context"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// NextAgentServersRequest pages through a plan.
type NextAgentServersRequest struct {
	RolloutID uuid.UUID `json:"rolloutId"`
	After     int       `json:"after"`
	Limit     int       `json:"limit"`
}

// NextAgentServers returns the next pending servers of a plan.
func (a *AgentActivities) NextAgentServers(ctx context.Context, r NextAgentServersRequest) ([]ledger.AgentServer, error) {
	return a.Store.PendingAgentServers(ctx, r.RolloutID, r.After, max(r.Limit, 1))
}

// StopAgentRolloutRequest ends a rollout early.
type StopAgentRolloutRequest struct {
	RolloutID uuid.UUID `json:"rolloutId"`
	Reason    string    `json:"reason"`
}

// StopAgentRollout marks the plan's remaining servers not started.
func (a *AgentActivities) StopAgentRollout(ctx context.Context, r StopAgentRolloutRequest) (int, error) {
	return a.Store.StopAgentRollout(ctx, r.RolloutID, r.Reason)
}

// AgentRolloutSummary is the ledger's view of a finished rollout.
type AgentRolloutSummary struct {
	Counts       map[string]int       `json:"counts"`
	FailedSample []ledger.AgentServer `json:"failedSample,omitempty"`
}

// SummarizeAgentRollout counts the plan's servers by state and lists some
// failed ones.
func (a *AgentActivities) SummarizeAgentRollout(ctx context.Context, rollout uuid.UUID) (AgentRolloutSummary, error) {
	counts, err := a.Store.AgentRolloutCounts(ctx, rollout)
	if err != nil {
		return AgentRolloutSummary{}, err
	}
	failed, err := a.Store.AgentServers(ctx, rollout, ledger.AgentServerFailed, maxSample)
	if err != nil {
		return AgentRolloutSummary{}, err
	}
	return AgentRolloutSummary{Counts: counts, FailedSample: failed}, nil
}
