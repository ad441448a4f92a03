package workflows

import (
	"testing"

	"github.com/fleetsaga/fleetsaga/internal/replay"
)

// replayWorkflows are the workflows recorded histories may contain. Add a
// kind's child workflows here when it records histories.
func replayWorkflows() []any {
	ws := []any{Rollout}
	for _, k := range []Kind{kindTest, KindSPFirmware, KindHostFlash, KindAgentInstall, KindAgentDrift, KindBootImageBump, KindZoneExpunge} {
		if info, ok := Kinds[k]; ok {
			ws = append(ws, info.Workflow)
		}
	}
	return append(ws, replayExtra...)
}

// replayExtra lists child workflows that are not kinds of their own.
var replayExtra = []any{AgentInstallServer}

// Recorded histories replay against the current code: a change to a running
// workflow's logic without workflow.GetVersion fails here.
func TestReplayRecordedHistories(t *testing.T) {
	replay.Check(t, "testdata/histories", replayWorkflows()...)
}
