package rollout

import (
	"sort"
	"time"

	"go.temporal.io/sdk/workflow"
)

// explainer keeps what the rollout waits for, as its stages last said it
// (the explain query adds the gate and the pause: rollout.explain).
type explainer struct {
	now   Explanation // what the rollout waits for
	batch int         // the current batch's size
}

// waiting says what the rollout waits for now.
func (x *explainer) waiting(ctx workflow.Context, w WaitReason, stage, reason string) {
	if x.now.Waiting == w && x.now.Reason == reason {
		return
	}
	x.now = Explanation{Waiting: w, Stage: stage, Reason: reason, Since: workflow.Now(ctx)}
}

// stopped says the rollout stopped itself, and why.
func (x *explainer) stopped(ctx workflow.Context, stage, reason string) {
	x.waiting(ctx, WaitStopped, stage, reason)
}

// waitsFor says whether the rollout already says it waits for w, why.
func (x *explainer) waitsFor(w WaitReason, reason string) bool {
	return x.now.Waiting == w && x.now.Reason == reason
}

// stageStop is why a stage stopped the rollout: a failed gate, a
// threshold, a window that cancels.
type stageStop struct {
	kind   string // failure type
	reason string
}

// runningUpdates are the updates running now (started: when each
// started), longest first: a stalled device is the first.
func runningUpdates(started map[string]time.Time) []RunningUpdate {
	var out []RunningUpdate
	for _, t := range workflow.DeterministicKeys(started) {
		out = append(out, RunningUpdate{Target: t, Since: started[t]})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		return out[i].Target < out[j].Target
	})
	return out
}
