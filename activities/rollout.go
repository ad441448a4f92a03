package activities

import (
	"context"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// RolloutActivities record what operators decide during a rollout.
type RolloutActivities struct {
	Store *ledger.Store
}

// RecordApproval writes who approved a stage and why.
func (a *RolloutActivities) RecordApproval(ctx context.Context, ap ledger.Approval) error {
	return a.Store.RecordApproval(ctx, ap)
}
