package workerapp

import (
	"go.temporal.io/sdk/worker"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Register registers every workflow and activity on r. Each update kind adds
// one line here.
func Register(r worker.Registry, d Deps) error {
	r.RegisterActivity(&activities.LedgerActivities{Store: d.Ledger, Identity: d.Identity})
	r.RegisterWorkflow(workflows.Rollout)
	r.RegisterActivity(&activities.RolloutActivities{Store: d.Ledger})
	return nil
}
