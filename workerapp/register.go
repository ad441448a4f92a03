package workerapp

import (
	"fmt"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/fleet/prom"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Register registers every workflow (workflows.Registrations: the
// catalogue of kinds) and every activity on r. Endpoints without a CNAPI leave the agent kinds unregistered.
func Register(r worker.Registry, d Deps) error {
	// One ledger activity for every path that records intent: built with
	// the Temporal client, it can release an attempt whose workflow was
	// terminated or timed out.
	la := &activities.LedgerActivities{Store: d.Ledger, Identity: d.Identity, Temporal: d.Temporal}
	mgsActs := activities.NewMGSActivities(d.Fleet, d.HTTP, d.Ledger, d.Identity)
	mgsActs.Ledger = la
	acts := []any{
		la,
		&activities.RolloutActivities{Store: d.Ledger, Temporal: d.Temporal},
		&activities.ApprovalActivities{Store: d.Ledger, Keyring: keyring(d)},
		activities.NewZoneActivities(d.Ledger, d.Fleet, d.HTTP, d.Identity),
		&activities.BootImageActivities{Kube: d.Fleet.KubeAccess(), HTTP: d.HTTP},
		mgsActs,
	}
	health := &activities.HealthActivities{HTTP: d.HTTP}
	if d.Fleet.Prometheus != "" {
		pc, err := prom.New(d.Fleet.Prometheus)
		if err != nil {
			return fmt.Errorf("health activities: %w", err)
		}
		health.Prom = pc
	}
	acts = append(acts, health)
	agents := d.Fleet.CNAPI != ""
	if agents {
		a, err := activities.NewAgentActivities(d.Fleet, d.HTTP, d.Ledger, d.Identity)
		if err != nil {
			return fmt.Errorf("agent activities: %w", err)
		}
		acts = append(acts, a)
	}
	for _, a := range acts {
		r.RegisterActivity(a)
	}
	for _, e := range workflows.Registrations() {
		if e.Agents && !agents {
			continue
		}
		r.RegisterWorkflowWithOptions(e.Workflow, workflow.RegisterOptions{VersioningBehavior: e.Behavior})
	}
	return nil
}

// keyring is d's, or an empty one that refuses every signed approval.
func keyring(d Deps) *approval.Keyring {
	if d.Keyring != nil {
		return d.Keyring
	}
	k, _ := approval.LoadKeyring(approval.KeyringConfig{}) // reads no file: cannot fail
	return k
}
