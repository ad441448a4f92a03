package chaos

import (
	"context"
	"time"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// childAttackTick is how often the attacks on running children (cancel,
// terminate and restart, reset, the duplicate starters) look for one. They
// used to ride on the kill ticks (4-8 s apart in a short run), where a
// stage whose updates all ran between two ticks was never attacked (seed
// 3 short: a cancel, then a terminate, never fired). A second is shorter
// than any child's update at the short run's speed-up, and costs one
// visibility list per pending attack.
const childAttackTick = time.Second

// attackChildren runs the blind-spot and reset attacks on the stage
// running, every childAttackTick, until the rollout ends.
func (h *harness) attackChildren(ctx context.Context, done <-chan struct{}) {
	t := time.NewTicker(childAttackTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-t.C:
		}
		p, err := h.progress(ctx, h.rolloutID)
		if err != nil || p.Phase != workflows.PhaseRunningStage {
			continue
		}
		for i, name := range h.stages {
			if p.Message == "stage "+name {
				h.blindTick(ctx, i)
				h.resetTick(ctx, i)
				break
			}
		}
	}
}
