package workerapp

import (
	"fmt"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// How a workflow moves between worker builds (Worker Deployment
// Versioning; ignored by an unversioned worker):
//   - pinned: a device update finishes on the build that started it, so a
//     new build never replays an attempt half-way through a device;
//   - autoUpgrade: a long-running parent (rollout, agent fan-out) moves to
//     the current build at its next workflow task, so a new build takes
//     over days-long rollouts; its command changes need workflow.GetVersion.
const (
	pinned      = workflow.VersioningBehaviorPinned
	autoUpgrade = workflow.VersioningBehaviorAutoUpgrade
)

// WorkflowEntry is one registered workflow type.
type WorkflowEntry struct {
	Workflow any
	Behavior workflow.VersioningBehavior
	// Agents: registered only when the worker has a CNAPI endpoint.
	Agents bool
}

// Workflows is every workflow a worker runs, with its versioning
// behaviour: the one place a new kind is added.
var Workflows = []WorkflowEntry{
	{Workflow: workflows.SPFirmwareUpdate, Behavior: pinned},
	{Workflow: workflows.HostBootFlashUpdate, Behavior: pinned},
	{Workflow: workflows.ZoneExpunge, Behavior: pinned},
	{Workflow: workflows.BootImageBump, Behavior: pinned},
	{Workflow: workflows.AgentInstallServer, Behavior: pinned, Agents: true},
	{Workflow: workflows.DryRun, Behavior: pinned},
	{Workflow: workflows.Rollout, Behavior: autoUpgrade},
	{Workflow: workflows.AgentInstall, Behavior: autoUpgrade, Agents: true},
	{Workflow: workflows.AgentDriftCheck, Behavior: autoUpgrade, Agents: true},
}

// Register registers every workflow (from Workflows) and every activity
// on r. Endpoints without a CNAPI leave the agent kinds unregistered.
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
		activities.NewZoneActivities(d.Ledger, d.Fleet, d.HTTP, d.Identity),
		&activities.BootImageActivities{Kube: d.Fleet.KubeAccess(), HTTP: d.HTTP},
		mgsActs,
	}
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
	for _, e := range Workflows {
		if e.Agents && !agents {
			continue
		}
		r.RegisterWorkflowWithOptions(e.Workflow, workflow.RegisterOptions{VersioningBehavior: e.Behavior})
	}
	return nil
}
