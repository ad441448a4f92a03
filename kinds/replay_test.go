package kinds

import (
	"testing"

	"github.com/fleetsaga/fleetsaga/internal/replay"
)

// replayWorkflows are the workflows recorded histories may contain: every
// registered workflow (the catalogue of kinds) and the test kind, which
// the rollout's tests add to the catalogue.
func replayWorkflows() []any {
	ws := []any{testUpdate}
	for _, r := range Registrations() {
		if workflowName(r.Workflow) != workflowName(testUpdate) {
			ws = append(ws, r.Workflow)
		}
	}
	return ws
}

// Recorded histories replay against the current code: a change to a running
// workflow's logic without workflow.GetVersion fails here.
func TestReplayRecordedHistories(t *testing.T) {
	replay.Check(t, "testdata/histories", replayWorkflows()...)
}
