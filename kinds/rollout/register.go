package rollout

import (
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/kinds"
)

// Registrations are the workflows this package adds to a worker: the
// rollout, a long-lived parent that moves to a new build (auto-upgrade),
// and its dry run, a short read-only run that must not (pinned).
func Registrations() []kinds.Registration {
	return []kinds.Registration{
		{Workflow: Rollout, Behavior: workflow.VersioningBehaviorAutoUpgrade},
		{Workflow: DryRun, Behavior: workflow.VersioningBehaviorPinned},
	}
}
