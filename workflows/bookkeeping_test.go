package workflows

import (
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
)

// preferOldBookkeeping makes a test workflow take the path from before
// changeBookkeepingV2 and V3 (as a run started on an older build replays it).
func preferOldBookkeeping(env *testsuite.TestWorkflowEnvironment) {
	env.SetWorkerOptions(worker.Options{PreferredVersionProvider: func(in worker.PreferredVersionProviderInput) *worker.VersionPreference {
		if in.ChangeID == changeBookkeepingV2 || in.ChangeID == changeBookkeepingV3 {
			return &worker.VersionPreference{Version: in.MinSupported}
		}
		return nil
	}})
}
