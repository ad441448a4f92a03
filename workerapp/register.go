package workerapp

import (
	"go.temporal.io/sdk/worker"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Register registers every workflow and activity on r. Each update kind adds
// one line here.
func Register(r worker.Registry, d Deps) error {
	// One ledger activity for every path that records intent: built with
	// the Temporal client, it can release an attempt whose workflow was
	// terminated or timed out.
	la := &activities.LedgerActivities{Store: d.Ledger, Identity: d.Identity, Temporal: d.Temporal}
	r.RegisterActivity(la)
	r.RegisterWorkflow(workflows.Rollout)
	r.RegisterActivity(&activities.RolloutActivities{Store: d.Ledger})
	r.RegisterWorkflow(workflows.ZoneExpunge)
	r.RegisterActivity(activities.NewZoneActivities(d.Ledger, d.Fleet, d.HTTP, d.Identity))
	workflows.RegisterBootImageBump(r, d.Fleet.KubeAccess(), d.HTTP)
	mgsActs := activities.NewMGSActivities(d.Fleet, d.HTTP, d.Ledger, d.Identity)
	mgsActs.Ledger = la
	workflows.RegisterMGSUpdates(r, mgsActs)
	if err := activities.RegisterAgents(r, d.Fleet, d.HTTP, d.Ledger, d.Identity, workflows.AgentWorkflows()); err != nil {
		return err
	}
	return nil
}
