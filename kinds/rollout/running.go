package rollout

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// inFlight is what runs now: the targets, when each started (explain,
// stragglers) and the last start or end of an update (stalls).
type inFlight struct {
	running   map[string]bool
	startedAt map[string]time.Time
	lastMove  time.Time
}

func newInFlight() *inFlight {
	return &inFlight{running: map[string]bool{}, startedAt: map[string]time.Time{}}
}

func (m *inFlight) start(ctx workflow.Context, target string) {
	m.running[target] = true
	m.startedAt[target] = workflow.Now(ctx)
	m.lastMove = workflow.Now(ctx)
}

func (m *inFlight) end(ctx workflow.Context, target string) {
	delete(m.running, target)
	delete(m.startedAt, target)
	m.lastMove = workflow.Now(ctx)
}
