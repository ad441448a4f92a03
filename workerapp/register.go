package workerapp

import (
	"fmt"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/fleet/prom"
	"github.com/fleetsaga/fleetsaga/kinds"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/kinds/bootimage"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
)

// Register registers every workflow (Registrations) and every activity
// on r. Endpoints without a CNAPI leave the agent kinds unregistered.
func Register(r worker.Registry, d Deps) error {
	// One ledger activity for every path that records intent: built with
	// the Temporal client, it can release an attempt whose workflow was
	// terminated or timed out.
	la := &activities.LedgerActivities{Store: d.Ledger, Identity: d.Identity, Temporal: d.Temporal}
	mgsActs := mgsupdate.NewMGSActivities(d.Fleet, d.HTTP, d.Ledger, d.Identity)
	mgsActs.ArtifactRoot = d.ArtifactRoot
	mgsActs.Ledger = la
	mgsActs.Phase2UploadStall = d.Phase2UploadStall
	acts := []any{
		la,
		&rollout.RolloutActivities{Store: d.Ledger, Temporal: d.Temporal},
		zoneexpunge.NewZoneActivities(d.Ledger, d.Fleet, d.HTTP, d.Identity),
		&bootimage.BootImageActivities{Kube: d.Fleet.KubeAccess(), HTTP: d.HTTP, Store: d.Ledger},
		&activities.ApprovalActivities{Store: d.Ledger, Keyring: keyring(d), Minimum: d.ApprovalMinimum},
		mgsActs,
	}
	health := &rollout.HealthActivities{HTTP: d.HTTP, AllowedHosts: d.HealthCheckHosts}
	if d.Fleet.Prometheus != "" {
		pc, err := prom.New(d.Fleet.Prometheus)
		if err != nil {
			return fmt.Errorf("health activities: %w", err)
		}
		health.Prom = pc
	}
	acts = append(acts, health, &rollout.NotifyActivities{Webhooks: d.Webhooks, HTTP: d.HTTP})
	withAgents := d.Fleet.CNAPI != ""
	if withAgents {
		a, err := agents.NewAgentActivities(d.Fleet, d.HTTP, d.Ledger, d.Identity)
		if err != nil {
			return fmt.Errorf("agent activities: %w", err)
		}
		a.ReportWait, a.SelfUpdateWait = d.AgentReportWait, d.AgentSelfUpdateWait
		acts = append(acts, a, &agents.AgentLedgerActivities{Ledger: la})
	}
	for _, a := range acts {
		r.RegisterActivity(a)
	}
	for _, e := range Registrations() {
		if e.Agents && !withAgents {
			continue
		}
		r.RegisterWorkflowWithOptions(e.Workflow, workflow.RegisterOptions{VersioningBehavior: e.Behavior})
	}
	return nil
}

// Registrations are every workflow a worker runs: the catalogue's kinds
// and their children, then the rollout's (package kinds never imports
// the rollout: the rollout reads the catalogue).
func Registrations() []kinds.Registration {
	return append(kinds.Registrations(), rollout.Registrations()...)
}

// keyring is d's, or an empty one that refuses every signed approval.
func keyring(d Deps) *approval.Keyring {
	if d.Keyring != nil {
		return d.Keyring
	}
	k, _ := approval.LoadKeyring(approval.KeyringConfig{}) // reads no file: cannot fail
	return k
}
