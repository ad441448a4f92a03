package rollout

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// verifyTimeout bounds one VerifyApproval or VerifyStart attempt: a
// signature check and a few ledger rows take milliseconds, an OIDC
// provider's discovery at most its own 10 s timeout; a worker lost
// mid-check is retried after this long.
const verifyTimeout = 30 * time.Second

// verifyRetryBound bounds the retries of a check whose ledger or identity
// provider is down: the approver's `starter approve` waits for the
// answer, so it must end with an error they can read, not hang for hours.
const verifyRetryBound = 5 * time.Minute

// rawStartTimeout bounds one RefuseRawStart attempt (one ledger insert);
// its retries have no bound. The start's ID token is readable in the
// start event, and the ledger's exposed mark is what refuses a copy of it
// sealed by a history reader: a rollout that gave up on the mark (the
// ledger down, or its owner holding a lock, past verifyRetryBound) would
// end with that copy usable. No one waits on this answer, so it retries,
// as SpendGateApprovals does, until the mark is written. Only the options
// differ from verifyOptions': replay compares a scheduled activity's ID
// and type, not its options (temporalio/sdk-go
// internal/internal_task_handlers.go, isCommandMatchEvent), so no marker.
const rawStartTimeout = 30 * time.Second

func rawStartOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: rawStartTimeout, RetryPolicy: workflows.LedgerRetry, Summary: summary,
	})
}

func verifyOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: verifyTimeout, ScheduleToCloseTimeout: verifyRetryBound,
		RetryPolicy: workflows.LedgerRetry, Summary: summary,
	})
}

// approvalGate holds the rollout before a stage with a gate until its
// policy's approvers approved the plan it shows, and keeps that plan to
// refuse the targets that drifted from it.
type approvalGate struct {
	in       *RolloutInput
	progress *workflows.Progress
	phase    func(ctx workflow.Context, p workflows.Phase, detail string)

	stage     string              // stage awaiting approval ("" = none)
	plan      *StagePlan          // the plan shown at the gate (nil while planning)
	approval  *workflows.Approval // the approval that opened the gate
	approved  *StagePlan          // the plan approved for the stage running now
	starter   string              // who signed the start (VerifyStart; "" unsigned)
	approvers []string            // principals whose approvals count at the gate
	refusals  int                 // approvals this run refused (approve)
	min       approval.Minimum    // the worker's least policy (readMinimum)
	bound     bool                // the digest binds the inputs (boundDigestVersion)
}

// minimumVersion marks the runs that read the worker's Minimum. The
// DefaultVersion branch (a zero Minimum) may go once no rollout started
// before it can be open.
const minimumVersion = "worker-approval-minimum"

// readMinimum asks a worker for its least approval policy, once: the
// answer is in the history, so every later task and replay applies the
// same one. Unanswered past verifyRetryBound, the rollout ends: it may
// not guess a weaker one.
func (g *approvalGate) readMinimum(ctx workflow.Context) error {
	if workflow.GetVersion(ctx, minimumVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	var a *activities.ApprovalActivities
	return workflow.ExecuteActivity(verifyOptions(ctx, "read the worker's least approval policy"), a.ApprovalMinimum).Get(ctx, &g.min)
}

// gated says whether st waits at a gate: the plan's, or the worker's for
// its kind.
func (g *approvalGate) gated(st Stage) bool { return st.Approval || g.min.Gates(string(st.Kind)) }

// await holds the rollout at the gate before st until approved.
func (g *approvalGate) await(ctx workflow.Context, st Stage) error {
	g.stage = st.Name
	g.phase(ctx, workflows.PhaseAwaitingApproval, "stage "+st.Name)
	g.show(ctx, st)
	for {
		if err := workflow.Await(ctx, func() bool { return g.approval != nil }); err != nil {
			return err
		}
		err := g.spend(ctx, st.Name)
		if err == nil {
			break
		}
		if !g.spentElsewhere(ctx, err) {
			return err
		}
	}
	g.approved = g.plan
	g.stage, g.approval, g.plan, g.approvers = "", nil, nil, nil
	return nil
}

// spentApprovalsVersion marks the runs that record, as their gate opens,
// that its approvals are spent. The DefaultVersion branch (a reset to
// before the gate counts them again) may go once no rollout started
// before it can be open.
const spentApprovalsVersion = "gate-approvals-spent"

// spendTimeout bounds one SpendGateApprovals attempt: one ledger insert.
const spendTimeout = 30 * time.Second

// spend records in the ledger that the gate of stage opened on the
// approvals recorded for it: an approval approves one pass of its gate.
// A run an operator resets to before the gate keeps the original run ID,
// and so the ledger's gate, and would otherwise open it again on them
// (the ledger's count, and the approve update the reset re-applies)
// though the stage already ran. The stage does not start before the
// record is written: its retries are not bounded, a ledger that is down
// holds the gate closed.
func (g *approvalGate) spend(ctx workflow.Context, stage string) error {
	if workflow.GetVersion(ctx, spentApprovalsVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: spendTimeout, RetryPolicy: workflows.LedgerRetry, Summary: "record that stage " + stage + "'s approvals are spent",
	})
	in := activities.GateApprovalsInput{
		Gate:  approval.Gate{Rollout: workflow.GetInfo(ctx).WorkflowExecution.ID, Stage: stage, PlanDigest: g.plan.Digest, Decision: approval.DecisionApprove},
		RunID: workflow.GetInfo(ctx).OriginalRunID,
	}
	var a *activities.ApprovalActivities
	return workflow.ExecuteActivity(actx, a.SpendGateApprovals, in).Get(ctx, nil)
}

// spentRefusedVersion marks the runs whose gate, refused at its spend
// because another run's pass spent the same approvals (a reset to the
// task that scheduled SpendGateApprovals), clears its approvers and waits
// for new approvals. Only such a refusal reaches the marker; the
// DefaultVersion branch (the refusal ends the rollout) may go once no
// rollout started before it can be open.
const spentRefusedVersion = "gate-spent-refusal-waits"

// spentElsewhere says whether err is SpendGateApprovals' Spent refusal,
// and if so closes the gate again: the approvals it counted approved the
// pass another run ran, so it shows the plan needing all its approvals.
func (g *approvalGate) spentElsewhere(ctx workflow.Context, err error) bool {
	var app *temporal.ApplicationError
	var reason string
	if !errors.As(err, &app) || app.Type() != failure.ApprovalRefused || app.Details(&reason) != nil || reason != string(approval.ReasonSpent) {
		return false
	}
	if workflow.GetVersion(ctx, spentRefusedVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return false
	}
	workflow.GetLogger(ctx).Warn("the gate's approvals were spent by another run's pass: waiting for new approvals", "stage", g.stage)
	g.approval, g.approvers = nil, nil
	g.showNeeded(ctx, g.policy(g.stage).StillNeeded(g.starter, nil))
	return true
}

// needsStarter says whether the start must be verified even unsigned: a
// gate with four eyes must know who started the rollout, so a worker
// with a keyring refuses an unsigned start of such a plan at once rather
// than at its gate.
func (in RolloutInput) needsStarter() bool {
	for _, st := range in.Stages {
		if st.Approval && st.ApprovalPolicy != nil && st.ApprovalPolicy.FourEyes {
			return true
		}
	}
	return false
}

// rawStartVersion marks the runs that refuse a start's plain-text ID
// token themselves (RefuseRawStart, given the statement alone) rather
// than copy it into VerifyStart's input. Only such starts reach the
// marker; the DefaultVersion branch may go once no rollout started with
// a plain-text token before it can be open.
const rawStartVersion = "start-refuses-raw-token"

// verifyStart checks who started the rollout and with which plan, and
// keeps the principal for four eyes.
func (g *approvalGate) verifyStart(ctx workflow.Context) error {
	if g.in.StartSignature == nil && !g.in.needsStarter() && !g.min.SignedStart {
		return nil
	}
	g.phase(ctx, workflows.PhaseStarting, "verifying who started plan "+g.in.Name)
	digest, err := g.in.StartDigest()
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "InvalidPlan", nil)
	}
	in := activities.VerifyStartInput{Rollout: workflow.GetInfo(ctx).WorkflowExecution.ID,
		RunID: workflow.GetInfo(ctx).OriginalRunID, PlanDigest: digest}
	var a *activities.ApprovalActivities
	if s := g.in.StartSignature; s != nil && s.IDToken != "" && workflow.GetVersion(ctx, rawStartVersion, workflow.DefaultVersion, 1) >= 1 {
		raw := activities.RawStartInput{Rollout: in.Rollout, RunID: in.RunID, PlanDigest: digest, Payload: s.Payload}
		err := workflow.ExecuteActivity(rawStartOptions(ctx, "refuse the plain-text ID token of plan "+g.in.Name), a.RefuseRawStart, raw).Get(ctx, nil)
		if err == nil { // it always refuses; the run must not go on if it did not
			err = temporal.NewNonRetryableApplicationError(approval.ErrRawIDToken.Error(), failure.ApprovalRefused, nil, string(approval.ReasonUnsealedToken))
		}
		return refused(err)
	}
	if g.in.StartSignature != nil {
		in.Signed = *g.in.StartSignature
	}
	var who approval.Principal
	if err := workflow.ExecuteActivity(verifyOptions(ctx, "verify who started plan "+g.in.Name), a.VerifyStart, in).Get(ctx, &who); err != nil {
		return refused(err)
	}
	g.starter = who.Name
	return nil
}

// countRecordedApprovals adds the approvers the ledger already holds for
// stage's gate and plan to the ones counted here: a reset to a point
// before the gate replays the history without the approvals given after
// that point, while the ledger, keyed by the original run ID that a reset
// keeps, still holds them and refuses the same approver again. The ledger
// unreadable past verifyRetryBound leaves the count as it is: the gate
// then needs more approvals than were given, never fewer.
func (g *approvalGate) countRecordedApprovals(ctx workflow.Context, stage, digest string) {
	in := activities.GateApprovalsInput{
		Gate:  approval.Gate{Rollout: workflow.GetInfo(ctx).WorkflowExecution.ID, Stage: stage, PlanDigest: digest, Decision: approval.DecisionApprove},
		RunID: workflow.GetInfo(ctx).OriginalRunID,
	}
	var a *activities.ApprovalActivities
	var recorded []string
	if err := workflow.ExecuteActivity(verifyOptions(ctx, "read the approvals of stage "+stage+" already in the ledger"), a.GateApprovals, in).Get(ctx, &recorded); err != nil {
		workflow.GetLogger(ctx).Warn("could not read the gate's recorded approvals; counting only those given from now", "stage", stage, "error", err)
		return
	}
	for _, who := range recorded {
		if !slices.Contains(g.approvers, who) {
			g.approvers = append(g.approvers, who)
		}
	}
}

// policy is what stage's gate needs: the plan's, at least the worker's.
func (g *approvalGate) policy(stage string) approval.Policy {
	for _, st := range g.in.Stages {
		if st.Name == stage && st.ApprovalPolicy != nil {
			return g.min.Stricter(*st.ApprovalPolicy)
		}
	}
	return g.min.Stricter(approval.Policy{Approvers: 1})
}

// verifyApproval is the approve update's handler: the worker's VerifyApproval checks the approval
// against its keyring, the gate and the stage's policy and records it; a
// refusal goes back to the approver with its reason and changes nothing.
// The gate opens once the policy's distinct approvers approved; until
// then it shows what it still needs.
func (g *approvalGate) verifyApproval(ctx workflow.Context, ap workflows.Approval) error {
	stage, shown := g.stage, g.plan // the validator checked both
	p := g.policy(stage)
	in := activities.VerifyApprovalInput{
		Gate:   approval.Gate{Rollout: workflow.GetInfo(ctx).WorkflowExecution.ID, Stage: stage, PlanDigest: shown.Digest, Decision: approval.DecisionApprove},
		Policy: p, Starter: g.starter, By: ap.By, Reason: ap.Reason, RunID: workflow.GetInfo(ctx).OriginalRunID,
	}
	if ap.Signed != nil {
		in.Signed = *ap.Signed
	}
	var a *activities.ApprovalActivities
	var res activities.VerifyApprovalResult
	if err := workflow.ExecuteActivity(verifyOptions(ctx, verifySummary(stage, ap)), a.VerifyApproval, in).Get(ctx, &res); err != nil {
		return refused(err)
	}
	workflow.GetLogger(ctx).Info("approval counted", "stage", stage, "principal", res.Principal.Name, "method", string(res.Principal.Method))
	if g.stage != stage || g.plan != shown {
		return nil // another approval opened the gate meanwhile; this one is recorded
	}
	// Counted here, not from the activity's answer: two approvals checked
	// at once each see the other missing from the ledger.
	if !slices.Contains(g.approvers, res.Principal.Name) {
		g.approvers = append(g.approvers, res.Principal.Name)
	}
	needed := p.StillNeeded(g.starter, g.approvers)
	if needed.Open() {
		g.approval = &ap
		return nil
	}
	g.showNeeded(ctx, needed)
	return nil
}

// verifySummary is the verify activity's summary in the Web UI. A
// signed approval's typed --by proves nothing: who approved is the
// principal the keyring verifies (the activity's result, the gate's
// "approved so far by"), so the summary names none.
func verifySummary(stage string, ap workflows.Approval) string {
	if ap.Signed == nil {
		return "verify an unsigned approval of stage " + stage + ", by " + ap.By + " as typed"
	}
	return "verify a signed approval of stage " + stage + " (who signed it: the result)"
}

// showNeeded publishes what the gate still needs: the gate-plan query
// (starter status, watch --until-gate) and the Web UI's current details.
func (g *approvalGate) showNeeded(ctx workflow.Context, n approval.Needed) {
	g.plan.StillNeeded = n.String()
	g.plan.ApprovedBy = slices.Clone(g.approvers)
	workflow.SetCurrentDetails(ctx, gateDetails(workflow.GetInfo(ctx).WorkflowExecution.ID, g.progress.State, g.stage, *g.plan))
}

// refused makes an activity's refusal the approver's answer: the
// refusal's own sentence (its reason stays the details), not the activity
// error wrapped around it. Any other error is returned as it is.
func refused(err error) error {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == failure.ApprovalRefused {
		var reason string
		_ = app.Details(&reason)
		return temporal.NewNonRetryableApplicationError(app.Message(), failure.ApprovalRefused, nil, reason)
	}
	return err
}

// awaitPlan holds an approval that arrived while the gate was still
// planning until the plan is shown, then checks it against that plan. An
// approval a reset re-applies lands there: refused, it would be lost
// from the reset run while the ledger keeps it.
func (g *approvalGate) awaitPlan(ctx workflow.Context, ap workflows.Approval) error {
	if g.plan != nil {
		return nil // the validator checked it
	}
	if err := workflow.Await(ctx, func() bool { return g.plan != nil || g.stage == "" }); err != nil {
		return err
	}
	if g.stage == "" {
		return fmt.Errorf("rollout %s is not waiting for an approval", g.in.Name)
	}
	return g.checkApprovedDigest(ap)
}

// show plans st read-only and publishes the plan: the gate-plan
// query (starter status, starter approve) and the Web UI's current details.
func (g *approvalGate) show(ctx workflow.Context, st Stage) {
	sp := planStage(ctx, st, nil) // the catalogue's device times: a running rollout's commands stay as they were
	if !g.bound {
		sp.Binding, sp.Digest = nil, planDigest(sp.Rows) // what this run's gate showed before the change
	}
	g.countRecordedApprovals(ctx, st.Name, sp.Digest)
	g.plan = &sp
	needed := g.policy(st.Name).StillNeeded(g.starter, g.approvers)
	if needed.Open() {
		g.approval = &workflows.Approval{By: strings.Join(g.approvers, ", "), Reason: "approved before the rollout was reset (ledger)",
			Stage: st.Name, PlanDigest: sp.Digest}
	}
	g.showNeeded(ctx, needed)
}

// checkApprovedDigest refuses an approval not bound to the plan the gate
// shows now: while that plan is not known yet, without a digest, or for
// another stage or plan (the approver saw an older one, e.g. the previous
// gate's). The digest covers the rows' stage, so a digest alone binds the
// stage too.
func (g *approvalGate) checkApprovedDigest(ap workflows.Approval) error {
	if g.plan == nil {
		return fmt.Errorf("rollout %s is still planning stage %s: look at the plan (starter status) and approve again", g.in.Name, g.stage)
	}
	shows := fmt.Sprintf("the gate now shows stage %s with plan %s: look at it again (starter status) and approve again", g.stage, g.plan.Digest[:12])
	switch {
	case ap.PlanDigest == "":
		return fmt.Errorf("the approval names no plan, and %s", shows)
	case ap.Stage != "" && ap.Stage != g.stage:
		return fmt.Errorf("the approval is for stage %s, but %s", ap.Stage, shows)
	case len(ap.PlanDigest) < 12 || !strings.HasPrefix(g.plan.Digest, ap.PlanDigest):
		return fmt.Errorf("the approval is for plan %s, but %s", ap.PlanDigest, shows)
	}
	return nil
}

// checkDrift plans u again before a gated stage starts it and compares the
// plan with the approved one: a target whose state moved is not touched.
func (g *approvalGate) checkDrift(ctx workflow.Context, st Stage, u PlanUpdate) (UpdateOutcome, bool) {
	out := UpdateOutcome{Stage: st.Name, Target: u.Target, WorkflowID: workflows.WorkflowID(st.Kind, u.Target)}
	if g.approved == nil || g.approved.Stage != st.Name {
		return out, false
	}
	var approved []workflows.PlanRow
	for _, row := range g.approved.Rows {
		if row.Target == u.Target {
			approved = append(approved, row)
		}
	}
	why := PlanDrift(approved, planUpdate(ctx, st.Kind, u).Rows)
	if why == "" {
		return out, false
	}
	out.State, out.Outcome, out.Error = StateRefused, OutcomePlanDrift, why
	return out, true
}
