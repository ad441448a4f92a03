package rollout

import (
	"testing"

	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/kinds"
)

// replayWorkflows are the workflows recorded histories may contain: every
// registered workflow (the catalogue of kinds, with the test kind this
// package's tests add to it, and the rollout's own).
func replayWorkflows() []any {
	var ws []any
	for _, r := range append(kinds.Registrations(), Registrations()...) {
		ws = append(ws, r.Workflow)
	}
	return ws
}

// Recorded histories replay against the current code: a change to a running
// workflow's logic without workflow.GetVersion fails here.
func TestReplayRecordedHistories(t *testing.T) {
	replay.Check(t, "../testdata/histories", replayWorkflows()...)
}
