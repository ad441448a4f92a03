package rollout

import (
	"encoding/json"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/kinds"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// RolloutInput is a validated plan: stages run in order; within a stage,
// updates run with bounded concurrency, never two of one exclusive group at
// once, and an optional approval gate before the stage starts.
type RolloutInput struct {
	Name   string  `json:"name"`
	Stages []Stage `json:"stages"`
	// StartSignature is the starter's signature over the plan's digest
	// (approval.DigestJSON of this input without it): the rollout verifies
	// it first (VerifyStart), and its principal is the starter four eyes
	// excludes. nil: an unsigned start.
	StartSignature *approval.Signed `json:"startSignature,omitempty"`
	// Calendar is when targets may start (windows, freezes); nil: any time.
	Calendar *Calendar `json:"calendar,omitempty"`
	// Notify names the worker's webhooks told of gates, stage ends,
	// aborts, stragglers and stalls; nil: none.
	Notify *Notify `json:"notify,omitempty"`
}

// Stage is one step of a plan: updates of one kind.
type Stage struct {
	Name string         `json:"name"`
	Kind workflows.Kind `json:"kind"`
	// Concurrency bounds how many updates of the stage run at once.
	Concurrency int `json:"concurrency"`
	// Approval makes the rollout wait for `starter approve` before the stage.
	Approval bool `json:"approval,omitempty"`
	// ApprovalPolicy is what the gate needs (distinct approvers, four
	// eyes, who may approve); nil: one approver, any allowed signer.
	ApprovalPolicy *approval.Policy `json:"approvalPolicy,omitempty"`
	// FailureBudget is how many updates may fail before the stage stops
	// starting new ones (0: the first failure stops it).
	FailureBudget int `json:"failureBudget,omitempty"`
	// Exclusive lists groups of targets of which at most one runs at a time
	// (e.g. the two switch-attached sleds).
	Exclusive [][]string   `json:"exclusive,omitempty"`
	Updates   []PlanUpdate `json:"updates"`
	// Health is the gate after each batch (issue 30); nil: none.
	Health *HealthGate `json:"health,omitempty"`
	// Thresholds abort on a failure percentage by class.
	Thresholds []Threshold `json:"thresholds,omitempty"`
	// Ramp grows the batch after healthy batches; nil: full concurrency.
	Ramp *Ramp `json:"ramp,omitempty"`
}

// PlanUpdate is one update: its canonical target and its kind's input.
type PlanUpdate struct {
	Target   string          `json:"target"`
	Artifact string          `json:"artifact,omitempty"`
	Input    json.RawMessage `json:"input"`
}

// UpdateOutcome is how one update of a rollout ended.
type UpdateOutcome struct {
	Stage      string          `json:"stage"`
	Target     string          `json:"target"`
	WorkflowID string          `json:"workflowId"`
	State      workflows.State `json:"state"`
	Outcome    string          `json:"outcome,omitempty"`
	Error      string          `json:"error,omitempty"`
	// FailureType and Class say why a failed update failed (the thresholds
	// count classes).
	FailureType string       `json:"failureType,omitempty"`
	Class       FailureClass `json:"class,omitempty"`
}

// RolloutResult summarises a rollout.
type RolloutResult struct {
	Name     string          `json:"name"`
	Outcomes []UpdateOutcome `json:"outcomes"`
	Failed   int             `json:"failed"`
	Skipped  int             `json:"skipped"`
	// Refused counts updates refused rather than failed: their target
	// drifted from the approved plan (gate_plan.go), or another
	// update held it.
	Refused int `json:"refused,omitempty"`
}

// RolloutWorkflowID is the workflow ID of a plan's rollout.
func RolloutWorkflowID(name string) string {
	return workflows.WorkflowID(workflows.KindRollout, "plan/"+name)
}

// maxRolloutUpdates bounds a plan so the parent stays far below Temporal's
// history limits (a few events per child); larger fan-outs belong inside
// one kind (AgentInstall windows its own children).
const maxRolloutUpdates = 400

// Rollout runs a plan.
func Rollout(ctx workflow.Context, in RolloutInput) (RolloutResult, error) {
	r := &rollout{in: in}
	if err := r.setup(ctx); err != nil {
		return RolloutResult{Name: in.Name}, err
	}
	return r.run(ctx)
}

type rollout struct {
	in       RolloutInput
	gatePlan *StagePlan // the plan shown at the current gate (nil while planning)
	approved *StagePlan // the plan approved for the stage running now
	progress workflows.Progress
	l        *workflows.Lifecycle
	paused   bool
	gate     string              // stage awaiting approval ("" = none)
	approval *workflows.Approval // the approval received for gate
	result   RolloutResult
	running  map[string]bool // targets running now
	// startedAt is when each running target started (starter explain).
	startedAt map[string]time.Time

	// the gated stages' state.
	why          Explanation // what the rollout waits for (explain)
	gateStatus   *GateStatus // the last health gate round
	rampSize     int         // the current batch's size
	events       int         // rollout_event rows written by this run
	calendar     map[workflows.Kind]calendarCache
	cancelWindow workflow.CancelFunc // cancels the running batch (endBehavior cancel)
	watchedClose time.Time           // the window end being watched
	windowCut    time.Time           // the window end that cancelled a batch
	notified     map[string]bool     // events told (once each)
	notices      workflow.WaitGroup  // deliveries still running
	lastMove     time.Time           // the last start or end of an update (stall)

	starter   string   // who signed the start (VerifyStart; "" unsigned)
	approvers []string // principals whose approvals count at the current gate
}

func (r *rollout) setup(ctx workflow.Context) error {
	if err := r.in.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "InvalidPlan", nil)
	}
	r.running = map[string]bool{}
	r.startedAt = map[string]time.Time{}
	r.result.Name = r.in.Name
	total := 0
	for _, st := range r.in.Stages {
		total += len(st.Updates)
	}
	r.progress = workflows.Progress{Kind: workflows.KindRollout, Target: "plan/" + r.in.Name, State: workflows.StateRunning,
		Started: workflow.Now(ctx), Total: int64(total), Unit: "updates",
		Counts: map[string]int{"done": 0, "running": 0, "failed": 0, "skipped": 0}}
	l, err := workflows.NewLifecycle(ctx, &r.progress, "", nil, func() workflows.Progress { return r.progress })
	if err != nil {
		return err
	}
	r.l = l
	if err := workflow.SetQueryHandler(ctx, GatePlanQuery, func() (*StagePlan, error) { return r.gatePlan, nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, ExplainQuery, func() (Explanation, error) { return r.explain(), nil }); err != nil {
		return err
	}
	workflows.ListenPauseResume(ctx, r.setPaused)
	return workflow.SetUpdateHandlerWithOptions(ctx, workflows.ApproveUpdate, func(ctx workflow.Context, ap workflows.Approval) error {
		if err := r.awaitGatePlan(ctx, ap); err != nil {
			return err
		}
		return r.verifyApproval(ctx, ap)
	}, workflow.UpdateHandlerOptions{Validator: func(ap workflows.Approval) error {
		if r.gate == "" {
			return fmt.Errorf("rollout %s is not waiting for an approval", r.in.Name)
		}
		if ap.By == "" || ap.Reason == "" {
			return fmt.Errorf("an approval needs who (by) and why (reason)")
		}
		if r.gatePlan == nil {
			return nil // the handler waits for the plan, then checks the digest
		}
		return r.checkApprovedDigest(ap)
	}})
}

// awaitGatePlan holds an approval that arrived while the gate was still
// planning until the plan is shown, then checks it against that plan. An
// approval a reset re-applies lands there: refused, it would be lost
// from the reset run while the ledger keeps it (issue 25).
func (r *rollout) awaitGatePlan(ctx workflow.Context, ap workflows.Approval) error {
	if r.gatePlan != nil {
		return nil // the validator checked it
	}
	if err := workflow.Await(ctx, func() bool { return r.gatePlan != nil || r.gate == "" }); err != nil {
		return err
	}
	if r.gate == "" {
		return fmt.Errorf("rollout %s is not waiting for an approval", r.in.Name)
	}
	return r.checkApprovedDigest(ap)
}

func (r *rollout) run(ctx workflow.Context) (RolloutResult, error) {
	if err := r.verifyStart(ctx); err != nil {
		for _, st := range r.in.Stages {
			for _, u := range st.Updates {
				r.skip(st.Name, u) // nothing started
			}
		}
		return r.result, r.end(ctx, err, "start not verified: "+failure.Line(err))
	}
	r.watchStalls(ctx)
	for _, st := range r.in.Stages {
		if st.Approval {
			if err := r.awaitApproval(ctx, st); err != nil {
				if temporal.IsCanceledError(err) {
					for _, u := range st.Updates {
						r.skip(st.Name, u) // the gated stage never started
					}
				}
				return r.result, r.cancelled(ctx, st.Name, err)
			}
		}
		if !st.Approval {
			r.approved = nil
		}
		failed, stop, err := r.runStage(ctx, st)
		if err != nil {
			return r.result, r.cancelled(ctx, st.Name, err)
		}
		if stop != nil {
			return r.result, r.abort(ctx, st, stop)
		}
		if st.budgetApplies() && failed > st.FailureBudget {
			r.skipRest(st.Name)
			msg := fmt.Sprintf("stage %s: %d failed, budget %d", st.Name, failed, st.FailureBudget)
			return r.result, r.end(ctx, temporal.NewNonRetryableApplicationError(msg, failure.FailureBudget, nil), msg)
		}
	}
	done := fmt.Sprintf("%d updates done", r.progress.Counts["done"])
	if r.result.Refused > 0 {
		done += fmt.Sprintf(", %d refused (another update held the target, or it drifted from the approved plan)", r.result.Refused)
	}
	return r.result, r.end(ctx, nil, done)
}

// awaitApproval holds the rollout at the gate before st until approved.
func (r *rollout) awaitApproval(ctx workflow.Context, st Stage) error {
	r.gate = st.Name
	r.setPhase(ctx, workflows.PhaseAwaitingApproval, "stage "+st.Name)
	r.showGatePlan(ctx, st)
	if err := workflow.Await(ctx, func() bool { return r.approval != nil }); err != nil {
		return err
	}
	r.approved = r.gatePlan
	r.gate, r.approval, r.gatePlan, r.approvers = "", nil, nil, nil
	return nil
}

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
			if r.running[t] {
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
		r.running[u.Target] = true
		r.startedAt[u.Target] = workflow.Now(ctx)
		r.lastMove = workflow.Now(ctx)
		r.count("running", 1)
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			out, drifted := r.checkDrift(ctx, st, u)
			if !drifted {
				out = r.runUpdate(ctx, st, u)
			}
			inFlight--
			delete(r.running, u.Target)
			delete(r.startedAt, u.Target)
			r.lastMove = workflow.Now(ctx)
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
	if r.adoptsEnded(ctx) {
		reuse = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	}
	res, err := r.startUpdate(cctx, st, u, reuse)
	if temporal.IsWorkflowExecutionAlreadyStartedError(err) {
		ours, ended := r.adopt(ctx, id, &out)
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
		out.FailureType, out.Class = classify(err)
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

func (r *rollout) skip(stage string, u PlanUpdate) {
	r.result.Skipped++
	r.count("skipped", 1)
	r.result.Outcomes = append(r.result.Outcomes, UpdateOutcome{Stage: stage, Target: u.Target, State: "skipped"})
}

func (r *rollout) skipRest(after string) {
	seen := false
	for _, st := range r.in.Stages {
		if seen {
			for _, u := range st.Updates {
				r.skip(st.Name, u)
			}
		}
		seen = seen || st.Name == after
	}
}

func (r *rollout) count(k string, d int) { r.progress.Counts[k] += d }

func (r *rollout) setPaused(ctx workflow.Context, p bool) {
	r.paused = p
	if p {
		r.progress.State = workflows.StatePaused
		workflows.SetSearchState(ctx, workflows.StatePaused, workflows.Phase(r.progress.Phase), r.progress.Message)
	} else {
		r.progress.State = workflows.StateRunning
		workflows.SetSearchState(ctx, workflows.StateRunning, workflows.Phase(r.progress.Phase), r.progress.Message)
	}
}

// setPhase announces a phase; detail (the stage) is free text for the
// progress query and the Web UI's current details.
func (r *rollout) setPhase(ctx workflow.Context, phase workflows.Phase, detail string) {
	r.progress.Message = detail
	r.l.Step(ctx, phase, detail)
}

// cancelled ends a rollout stopped by err in stage (after its children,
// see runWindow): what never started is skipped, and the ending is
// published on a disconnected context (lifecycle.end).
func (r *rollout) cancelled(ctx workflow.Context, stage string, err error) error {
	r.skipRest(stage)
	how := "failed"
	if temporal.IsCanceledError(err) {
		how = "cancelled"
	}
	return r.end(ctx, err, fmt.Sprintf("%s in stage %s: %d done, %d skipped", how, stage, r.progress.Counts["done"], r.result.Skipped))
}

// end ends the rollout through the lifecycle (a rollout has no ledger
// attempt of its own: its updates do); outcome is what the progress query
// and the Web UI say.
func (r *rollout) end(ctx workflow.Context, err error, outcome string) error {
	r.flushNotices(ctx)
	return r.l.End(ctx, err, workflows.Ending{Outcome: outcome, Message: outcome, FailedOutcome: outcome})
}
