package workerapp

import (
	"go.temporal.io/sdk/worker"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Register registers every workflow and activity on r. Each update kind adds
// one line here.
func Register(r worker.Registry, d Deps) error {
	r.RegisterActivity(&activities.LedgerActivities{Store: d.Ledger, Identity: d.Identity, Temporal: d.Temporal})
	r.RegisterWorkflow(workflows.Rollout)
	r.RegisterActivity(&activities.RolloutActivities{Store: d.Ledger})
	r.RegisterWorkflow(workflows.ZoneExpunge)
	r.RegisterActivity(activities.NewZoneActivities(d.Ledger, d.Fleet, d.HTTP, d.Identity))
	workflows.RegisterBootImageBump(r, d.Fleet.KubeAccess(), d.HTTP)
	workflows.RegisterMGSUpdates(r, activities.NewMGSActivities(d.Fleet, d.HTTP, d.Ledger, d.Identity))
	if err := activities.RegisterAgents(r, d.Fleet, d.HTTP, d.Ledger, d.Identity, workflows.AgentWorkflows()); err != nil {
		return err
	}
	return nil
}
