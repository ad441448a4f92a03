package chaos

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
)

// Invariant 8 (no target blocked by an attempt whose workflow is closed)
// has nothing to look at once everything ended cleanly: no attempt is
// active then. So it is also checked while the run goes on, after each
// tick's attacks: every active ledger attempt must have a run of its
// workflow ID still running (a reset or a restart after a terminate
// leaves the attempt to a new run of the same ID).

// blockedSamples are the active attempts examined during the run and the
// ones found blocked (by attempt ID, each reported once).
type blockedSamples struct {
	checked int
	blocked map[string]string
}

// sampleBlockedTimeout bounds one sample: a slow Temporal (restarting)
// skips it rather than delaying the next tick.
const sampleBlockedTimeout = 10 * time.Second

func (h *harness) sampleBlocked(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, sampleBlockedTimeout)
	defer cancel()
	active, err := h.obs.activeAttemptRows(sctx)
	if err != nil {
		return
	}
	for _, a := range active {
		desc, err := h.c.DescribeWorkflowExecution(sctx, a.WorkflowID, "")
		if err != nil {
			continue // Temporal restarting, or the ID unknown: not a sample
		}
		info := desc.GetWorkflowExecutionInfo()
		if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			h.blocked.checked++
			continue
		}
		// The run may have ended the attempt just before it closed: only
		// an attempt still active after its workflow closed blocks.
		state, err := h.obs.attemptState(sctx, a.ID)
		if err != nil {
			continue
		}
		h.blocked.checked++
		if terminal(state) {
			continue
		}
		if h.blocked.blocked == nil {
			h.blocked.blocked = map[string]string{}
		}
		if _, seen := h.blocked.blocked[a.ID.String()]; !seen {
			h.blocked.blocked[a.ID.String()] = fmt.Sprintf("%s was blocked during the run (%s) by attempt %d (%s) of %s, whose latest run %s is closed (%s)",
				a.Target, time.Since(h.started).Round(time.Second), a.Attempt, state, a.WorkflowID, short(info.GetExecution().GetRunId()), info.GetStatus())
		}
	}
}
