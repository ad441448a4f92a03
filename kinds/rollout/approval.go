package rollout

import (
	"errors"
	"slices"
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

func verifyOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: verifyTimeout, ScheduleToCloseTimeout: verifyRetryBound,
		RetryPolicy: workflows.LedgerRetry, Summary: summary,
	})
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

// verifyStart checks who started the rollout and with which plan, and
// keeps the principal for four eyes.
func (r *rollout) verifyStart(ctx workflow.Context) error {
	if r.in.StartSignature == nil && !r.in.needsStarter() {
		return nil
	}
	r.setPhase(ctx, workflows.PhaseStarting, "verifying who started plan "+r.in.Name)
	digest, err := r.in.StartDigest()
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "InvalidPlan", nil)
	}
	in := activities.VerifyStartInput{Rollout: workflow.GetInfo(ctx).WorkflowExecution.ID,
		RunID: workflow.GetInfo(ctx).OriginalRunID, PlanDigest: digest}
	if r.in.StartSignature != nil {
		in.Signed = *r.in.StartSignature
	}
	var a *activities.ApprovalActivities
	var who approval.Principal
	if err := workflow.ExecuteActivity(verifyOptions(ctx, "verify who started plan "+r.in.Name), a.VerifyStart, in).Get(ctx, &who); err != nil {
		return refused(err)
	}
	r.starter = who.Name
	return nil
}

// countRecordedApprovals adds the approvers the ledger already holds for
// stage's gate and plan to the ones counted here: a reset to a point
// before the gate replays the history without the approvals given after
// that point, while the ledger, keyed by the original run ID that a reset
// keeps, still holds them and refuses the same approver again. The ledger
// unreadable past verifyRetryBound leaves the count as it is: the gate
// then needs more approvals than were given, never fewer.
func (r *rollout) countRecordedApprovals(ctx workflow.Context, stage, digest string) {
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
		if !slices.Contains(r.approvers, who) {
			r.approvers = append(r.approvers, who)
		}
	}
}

// policy is what stage's gate needs.
func (r *rollout) policy(stage string) approval.Policy {
	for _, st := range r.in.Stages {
		if st.Name == stage && st.ApprovalPolicy != nil {
			return *st.ApprovalPolicy
		}
	}
	return approval.Policy{Approvers: 1}
}

// verifyApproval is the approve update's handler: the worker's VerifyApproval checks the approval
// against its keyring, the gate and the stage's policy and records it; a
// refusal goes back to the approver with its reason and changes nothing.
// The gate opens once the policy's distinct approvers approved; until
// then it shows what it still needs.
func (r *rollout) verifyApproval(ctx workflow.Context, ap workflows.Approval) error {
	stage, shown := r.gate, r.gatePlan // the validator checked both
	p := r.policy(stage)
	in := activities.VerifyApprovalInput{
		Gate:   approval.Gate{Rollout: workflow.GetInfo(ctx).WorkflowExecution.ID, Stage: stage, PlanDigest: shown.Digest, Decision: approval.DecisionApprove},
		Policy: p, Starter: r.starter, By: ap.By, Reason: ap.Reason, RunID: workflow.GetInfo(ctx).OriginalRunID,
	}
	if ap.Signed != nil {
		in.Signed = *ap.Signed
	}
	var a *activities.ApprovalActivities
	var res activities.VerifyApprovalResult
	if err := workflow.ExecuteActivity(verifyOptions(ctx, "verify approval of stage "+stage+" by "+ap.By), a.VerifyApproval, in).Get(ctx, &res); err != nil {
		return refused(err)
	}
	if r.gate != stage || r.gatePlan != shown {
		return nil // another approval opened the gate meanwhile; this one is recorded
	}
	// Counted here, not from the activity's answer: two approvals checked
	// at once each see the other missing from the ledger.
	if !slices.Contains(r.approvers, res.Principal.Name) {
		r.approvers = append(r.approvers, res.Principal.Name)
	}
	needed := p.StillNeeded(r.starter, r.approvers)
	if needed.Open() {
		r.approval = &ap
		return nil
	}
	r.showNeeded(ctx, needed)
	return nil
}

// showNeeded publishes what the gate still needs: the gate-plan query
// (starter status, watch --until-gate) and the Web UI's current details.
func (r *rollout) showNeeded(ctx workflow.Context, n approval.Needed) {
	r.gatePlan.StillNeeded = n.String()
	r.gatePlan.ApprovedBy = slices.Clone(r.approvers)
	workflow.SetCurrentDetails(ctx, gateDetails(workflow.GetInfo(ctx).WorkflowExecution.ID, r.progress.State, r.gate, *r.gatePlan))
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
