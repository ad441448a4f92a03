package rollout

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// RolloutActivities record what operators decide during a rollout, and
// wait for the updates a reset rollout adopts.
type RolloutActivities struct {
	Store    *ledger.Store
	Temporal client.Client
}

// RecordApproval writes who approved a stage and why.
func (a *RolloutActivities) RecordApproval(ctx context.Context, ap ledger.Approval) error {
	return a.Store.RecordApproval(ctx, ap)
}
