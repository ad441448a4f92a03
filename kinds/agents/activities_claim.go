package agents

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// AgentLedgerActivities are the agent install's own ledger activities (its
// claims, its servers' rows), over the shared LedgerActivities.
type AgentLedgerActivities struct {
	Ledger *activities.LedgerActivities
}

// ClaimAgentsRequest claims a planned rollout's agents on its servers.
type ClaimAgentsRequest struct {
	RolloutID uuid.UUID `json:"rolloutId"`
	Agents    []string  `json:"agents"`
}

// ClaimAgents holds every (server, agent) of the rollout's plan until the
// rollout's attempt ends, so that another rollout sharing an agent on a
// server cannot install it there meanwhile. A claim held by another active
// rollout is a non-retryable TargetBusy error; one held by a rollout whose
// workflow ended without ending its attempt is released first.
func (a *AgentLedgerActivities) ClaimAgents(ctx context.Context, r ClaimAgentsRequest) error {
	err := a.Ledger.Store.ClaimAgents(ctx, r.RolloutID, r.Agents)
	var busy *ledger.ErrTargetBusy
	if errors.As(err, &busy) && activities.ReleaseAbandoned(ctx, a.Ledger, busy) {
		err = a.Ledger.Store.ClaimAgents(ctx, r.RolloutID, r.Agents)
	}
	if errors.As(err, &busy) {
		return temporal.NewNonRetryableApplicationError(busy.Error(), failure.TargetBusy, nil, busy.UpdateID)
	}
	return err
}
