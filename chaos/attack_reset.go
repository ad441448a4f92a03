package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// The reset attack: an operator's `temporal workflow
// reset` of a running child, mid-update (its ledger attempt active), to
// its first workflow task, to its last, or to a random completed one. The
// reset run replays the history up to that point under a new run ID: the
// update must keep its attempt's identity (fleet truth = ledger, nothing
// delivered twice, its target not blocked by the dead run's attempt).

// resetPoint is where in the history a reset goes back to.
type resetPoint string

const (
	resetFirst  resetPoint = "first workflow task"
	resetLast   resetPoint = "last workflow task"
	resetRandom resetPoint = "random workflow task"
)

var resetPoints = []resetPoint{resetFirst, resetLast, resetRandom}

// attackName is the point's row in the coverage table.
func (p resetPoint) attackName() string { return "reset to the " + string(p) }

// plannedReset is one reset the schedule owes: at the first tick at or
// after stage, on a running child of the stage running then.
type plannedReset struct {
	stage int
	point resetPoint
}

// resetRun is what one reset did, for the invariants and the report.
type resetRun struct {
	ID, OldRunID, NewRunID string
	Kind                   workflows.Kind
	Point                  resetPoint
	EventID                int64
}

// planResets spreads n resets over the stages in the seeded order, the
// points rotating so that any three consecutive resets cover all three
// and, with three per stage, every stage gets every point.
func planResets(rng *rand.Rand, stages, n int) []plannedReset {
	if stages == 0 {
		return nil
	}
	order := rng.Perm(stages)
	out := make([]plannedReset, 0, n)
	for i := 0; i < n; i++ {
		round := i / stages
		out = append(out, plannedReset{stage: order[i%stages], point: resetPoints[(i+round)%len(resetPoints)]})
	}
	return out
}

// resetEventID picks the WorkflowTaskCompleted event to reset to (the
// reset is exclusive: the run replays up to that task's start and runs the
// task again), as `temporal workflow reset --type` does for first and last.
func resetEventID(completed []int64, p resetPoint, rng *rand.Rand) (int64, bool) {
	if len(completed) == 0 {
		return 0, false
	}
	switch p {
	case resetFirst:
		return completed[0], true
	case resetLast:
		return completed[len(completed)-1], true
	default:
		return completed[rng.Intn(len(completed))], true
	}
}

// resetTick fires every reset due at this tick, each on another child of
// the stage running that is mid-update: a stage's updates may all run
// within a few ticks (the short run's SP stage does).
func (h *harness) resetTick(ctx context.Context, stage int) {
	b := h.blind
	left := b.resets[:0]
	for _, r := range b.resets {
		if r.stage > stage || !h.resetChild(ctx, h.stageKind[stage], r.point) {
			left = append(left, r)
		}
	}
	b.resets = left
}

// resetChild resets a running child of kind k, mid-update, to point p.
func (h *harness) resetChild(ctx context.Context, k workflows.Kind, p resetPoint) bool {
	w, _, ok := h.runningChild(ctx, k, true, false)
	if !ok {
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	completed, err := h.completedTasks(cctx, w.ID, w.RunID)
	if err != nil {
		h.say("read the history of %s to reset it: %v", w.ID, err)
		return false
	}
	ev, ok := resetEventID(completed, p, h.brng)
	if !ok {
		return false
	}
	resp, err := h.c.ResetWorkflowExecution(cctx, &workflowservice.ResetWorkflowExecutionRequest{
		Namespace:                 "default",
		WorkflowExecution:         &commonpb.WorkflowExecution{WorkflowId: w.ID, RunId: w.RunID},
		Reason:                    fmt.Sprintf("chaos seed %d: reset to the %s", h.cfg.Seed, p),
		WorkflowTaskFinishEventId: ev,
		RequestId:                 uuid.NewString(),
	})
	if err != nil {
		h.say("reset %s to the %s (event %d): %v", w.ID, p, ev, err)
		return false
	}
	// The reset terminates the run it replaced: that TERMINATED is ours.
	h.blind.terminated[w.RunID] = true
	h.blind.reset[w.ID] = true
	h.blind.resetRuns = append(h.blind.resetRuns, resetRun{ID: w.ID, OldRunID: w.RunID, NewRunID: resp.GetRunId(), Kind: k, Point: p, EventID: ev})
	h.mu.Lock()
	h.rep.Resets[string(p)]++
	h.mu.Unlock()
	h.say("reset %s (run %s) to the %s (event %d): new run %s", w.ID, short(w.RunID), p, ev, short(resp.GetRunId()))
	return true
}

// completedTasks lists the run's WorkflowTaskCompleted event IDs in order.
func (h *harness) completedTasks(ctx context.Context, id, runID string) ([]int64, error) {
	var out []int64
	it := h.c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, err
		}
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			out = append(out, ev.GetEventId())
		}
	}
	return out, nil
}
