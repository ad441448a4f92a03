package rollout

import (
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/kinds"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// windowHooks are what a window of updates asks its stage: how many may
// run at once, whether to stop starting, what a start waits for (a gated
// stage's calendar; nil: nothing) and what each ending tells it.
type windowHooks struct {
	concurrency func() int
	stop        func(failed int) bool
	// beforeStart may wait; waited says it did (the window then chooses
	// again: what it chose may be blocked now).
	beforeStart func(ctx workflow.Context) (waited bool, err error)
	ended       func(out UpdateOutcome)
}

// runWindow starts updates in a sliding window, never two of one
// exclusive group at once, and returns how many failed and which it did
// not start.
func (r *rollout) runWindow(ctx workflow.Context, st Stage, updates []PlanUpdate, h windowHooks) (int, []PlanUpdate, error) {
	groupOf := map[string]int{}
	for i, g := range st.Exclusive {
		for _, t := range g {
			groupOf[t] = i + 1
		}
	}
	blocked := func(target string) bool {
		g := groupOf[target]
		if g == 0 {
			return false
		}
		for _, t := range st.Exclusive[g-1] {
			if r.moves.running[t] {
				return true
			}
		}
		return false
	}
	pending := append([]PlanUpdate(nil), updates...)
	inFlight, failed := 0, 0
	wg := workflow.NewWaitGroup(ctx)
	for len(pending) > 0 {
		next := -1
		err := workflow.Await(ctx, func() bool {
			if h.stop(failed) {
				return true
			}
			if r.paused || inFlight >= h.concurrency() {
				return false
			}
			for i, u := range pending {
				if !blocked(u.Target) {
					next = i
					return true
				}
			}
			return false
		})
		if err != nil {
			break // cancelled: the running updates compensate; wait for them below
		}
		if h.stop(failed) {
			break
		}
		if h.beforeStart != nil {
			waited, err := h.beforeStart(ctx)
			if err != nil {
				break
			}
			if waited {
				continue
			}
		}
		u := pending[next]
		pending = append(pending[:next], pending[next+1:]...)
		inFlight++
		r.moves.start(ctx, u.Target)
		r.count("running", 1)
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			out, drifted := r.approvals.checkDrift(ctx, st, u)
			if !drifted {
				out = r.runUpdate(ctx, st, u)
			}
			inFlight--
			r.moves.end(ctx, u.Target)
			r.count("running", -1)
			r.result.Outcomes = append(r.result.Outcomes, out)
			if out.State == StateRefused {
				r.result.Refused++
				r.count("refused", 1)
			} else if out.State == workflows.StateCompleted {
				r.count("done", 1)
				r.progress.Done++
			} else {
				failed++
				r.result.Failed++
				r.count("failed", 1)
			}
			if h.ended != nil {
				h.ended(out)
			}
		})
	}
	wg.Wait(ctx)
	if ctx.Err() != nil {
		return failed, pending, temporal.NewCanceledError("rollout cancelled")
	}
	return failed, pending, nil
}

// runUpdate runs one update as a child workflow with the update's own
// workflow ID, so a standalone start of the same update is refused.
func (r *rollout) runUpdate(ctx workflow.Context, st Stage, u PlanUpdate) UpdateOutcome {
	id := workflows.WorkflowID(st.Kind, u.Target)
	out := UpdateOutcome{Stage: st.Name, Target: u.Target, WorkflowID: id}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:        id,
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		// On cancel the child runs its compensations; its result is how
		// it really ended.
		WaitForCancellation: true,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.SAKind.ValueSet(string(st.Kind)), workflows.SATarget.ValueSet(u.Target), workflows.SAArtifact.ValueSet(u.Artifact),
			workflows.SAState.ValueSet(string(workflows.StateRunning)), workflows.SARollout.ValueSet(r.in.Name)),
		StaticSummary: fmt.Sprintf("%s of %s (rollout %s, stage %s)", st.Kind, u.Target, r.in.Name, st.Name),
	})
	// In a run an operator's reset made, an update an earlier run of this
	// rollout started is adopted, ended or running, never started again.
	reuse := enumspb.WORKFLOW_ID_REUSE_POLICY_UNSPECIFIED
	if r.adopter.adoptsEnded(ctx) {
		reuse = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	}
	res, err := r.startUpdate(cctx, st, u, reuse)
	if temporal.IsWorkflowExecutionAlreadyStartedError(err) {
		ours, ended := r.adopter.adopt(ctx, id, &out)
		if ours {
			return out // started by this rollout before an operator reset it
		}
		if ended { // an earlier rollout's (or a hand-started) update, ended: this one runs
			res, err = r.startUpdate(cctx, st, u, enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE)
		}
	}
	switch {
	case err == nil:
		out.State = workflows.StateCompleted
		if o, ok := res["outcome"].(string); ok {
			out.Outcome = o
		}
	case temporal.IsCanceledError(err):
		out.State, out.Error = workflows.StateCancelled, failure.Line(err)
	case temporal.IsWorkflowExecutionAlreadyStartedError(err):
		// Another rollout's (or a hand-started) update of the same target.
		out.State, out.Outcome, out.Error = StateRefused, OutcomeTargetClaimed, "another workflow runs "+id+": "+failure.Line(err)
	case workflows.IsTargetBusy(err):
		out.State, out.Outcome, out.Error = StateRefused, failure.TargetBusy, failure.Line(err)
	default:
		out.State, out.Error = workflows.StateFailed, failure.Line(err)
		out.FailureType, out.Class = classifyOutcome(ctx, err)
	}
	return out
}

// startUpdate runs u's child workflow under reuse and returns its result.
func (r *rollout) startUpdate(cctx workflow.Context, st Stage, u PlanUpdate, reuse enumspb.WorkflowIdReusePolicy) (map[string]any, error) {
	opts := workflow.GetChildWorkflowOptions(cctx)
	opts.WorkflowIDReusePolicy = reuse
	var res map[string]any
	err := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(cctx, opts), kinds.Kinds[st.Kind].Workflow, u.Input).Get(cctx, &res)
	return res, err
}

// codedClassesVersion marks the runs that class a coded failure type
// (MGSRejected:<code>) by its base type; before it, coded types counted
// as other. The DefaultVersion branch may go once no rollout started
// before it can be open. Only a run that meets a coded failure asks, so
// other histories carry no marker.
const codedClassesVersion = "coded-failure-classes"

// classifyOutcome is classify, as the run's version of it decides.
func classifyOutcome(ctx workflow.Context, err error) (string, FailureClass) {
	typ, class := classify(err)
	if failure.Base(typ) != typ && workflow.GetVersion(ctx, codedClassesVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		class = ClassOther
	}
	return typ, class
}
