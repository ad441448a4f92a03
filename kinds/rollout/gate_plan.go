package rollout

import (
	"fmt"
	"strings"

	"github.com/fleetsaga/fleetsaga/workflows"
	"go.temporal.io/sdk/workflow"
)

// GatePlanQuery answers the plan a rollout shows at its current gate
// (null when it is not at a gate, or still planning).
const GatePlanQuery = "gate-plan"

// OutcomePlanDrift is the outcome of an update a gated stage did not start
// because its target no longer matched the approved plan.
const OutcomePlanDrift = "PlanDrift"

// StateRefused is the outcome state of such an update, and of one whose
// target another update held (OutcomeTargetClaimed, TargetBusy): a refusal
// is not a failure and does not count against the stage's budget.
const StateRefused workflows.State = "refused"

// OutcomeTargetClaimed is the outcome of an update that another workflow
// (another rollout's child, or an update started by hand) was running.
const OutcomeTargetClaimed = "TargetClaimed"

// showGatePlan plans st read-only and publishes the plan: the gate-plan
// query (starter status, starter approve) and the Web UI's current details.
func (r *rollout) showGatePlan(ctx workflow.Context, st Stage) {
	sp := planStage(ctx, st, nil) // the catalogue's device times: a running rollout's commands stay as they were
	r.countRecordedApprovals(ctx, st.Name, sp.Digest)
	r.gatePlan = &sp
	needed := r.policy(st.Name).StillNeeded(r.starter, r.approvers)
	if needed.Open() {
		r.approval = &workflows.Approval{By: strings.Join(r.approvers, ", "), Reason: "approved before the rollout was reset (ledger)",
			Stage: st.Name, PlanDigest: sp.Digest}
	}
	r.showNeeded(ctx, needed)
}

// gateDetails is the Web UI's current details at a gate: that it awaits
// approval, the stage, its plan and digest, the command that approves it,
// and what the gate still needs. (The static summary, fixed at the start,
// can only say where the gates are: RolloutInput.StartSummary.)
func gateDetails(id string, state workflows.State, stage string, sp StagePlan) string {
	s := fmt.Sprintf("**%s** — **awaiting approval** of stage %s, plan %s (phase %s)\n\n%s\nApprove: `starter approve %s --plan-digest %s --reason \"…\"` (`starter status %s` shows the plan)\n",
		state, stage, sp.Digest[:12], workflows.PhaseAwaitingApproval, gatePlanDetails(sp), id, sp.Digest[:12], id)
	if sp.StillNeeded != "" {
		s += "\nStill needed: " + sp.StillNeeded
		if len(sp.ApprovedBy) > 0 {
			s += " (approved so far by " + strings.Join(sp.ApprovedBy, ", ") + ")"
		}
		s += "\n"
	}
	return s
}

// gatePlanDetails is a gate's plan as Markdown for the Web UI: what will
// change, then what will not and why.
func gatePlanDetails(sp StagePlan) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("Plan %s: %d to change, %d refused, about %s.\n\n", sp.Digest[:12], sp.Changes, sp.Refused, sp.Estimate))
	for _, row := range sp.Rows {
		what := row.Target
		if row.Device != "" {
			what += " " + row.Device
		}
		b.WriteString(fmt.Sprintf("- %s: **%s** %s → %s", what, row.Action, dashEmpty(row.Current), dashEmpty(row.Desired)))
		if row.Reason != "" {
			b.WriteString(" (" + row.Reason + ")")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func dashEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// checkApprovedDigest refuses an approval not bound to the plan the gate
// shows now: while that plan is not known yet, without a digest, or for
// another stage or plan (the approver saw an older one, e.g. the previous
// gate's). The digest covers the rows' stage, so a digest alone binds the
// stage too.
func (r *rollout) checkApprovedDigest(ap workflows.Approval) error {
	if r.gatePlan == nil {
		return fmt.Errorf("rollout %s is still planning stage %s: look at the plan (starter status) and approve again", r.in.Name, r.gate)
	}
	shows := fmt.Sprintf("the gate now shows stage %s with plan %s: look at it again (starter status) and approve again", r.gate, r.gatePlan.Digest[:12])
	switch {
	case ap.PlanDigest == "":
		return fmt.Errorf("the approval names no plan, and %s", shows)
	case ap.Stage != "" && ap.Stage != r.gate:
		return fmt.Errorf("the approval is for stage %s, but %s", ap.Stage, shows)
	case len(ap.PlanDigest) < 12 || !strings.HasPrefix(r.gatePlan.Digest, ap.PlanDigest):
		return fmt.Errorf("the approval is for plan %s, but %s", ap.PlanDigest, shows)
	}
	return nil
}

// checkDrift plans u again before a gated stage starts it and compares the
// plan with the approved one: a target whose state moved is not touched.
func (r *rollout) checkDrift(ctx workflow.Context, st Stage, u PlanUpdate) (UpdateOutcome, bool) {
	out := UpdateOutcome{Stage: st.Name, Target: u.Target, WorkflowID: workflows.WorkflowID(st.Kind, u.Target)}
	if r.approved == nil || r.approved.Stage != st.Name {
		return out, false
	}
	var approved []workflows.PlanRow
	for _, row := range r.approved.Rows {
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

// PlanDrift compares a target's approved rows with its rows now ("" when
// they match): e.g. "planned 1.0.4 → 1.0.5, found 1.0.6".
func PlanDrift(approved, now []workflows.PlanRow) string {
	if len(approved) != len(now) {
		return fmt.Sprintf("planned %d rows, found %d: the target changed since the approval", len(approved), len(now))
	}
	for i, a := range approved {
		n := now[i]
		if a.Device == n.Device && a.Current == n.Current && a.Desired == n.Desired && a.Action == n.Action {
			continue
		}
		where := ""
		if a.Device != "" {
			where = a.Device + ": "
		}
		if a.Current != n.Current {
			return fmt.Sprintf("%splanned %s → %s, found %s", where, dashEmpty(a.Current), dashEmpty(a.Desired), dashEmpty(n.Current))
		}
		return strings.TrimSpace(fmt.Sprintf("%splanned %s (%s → %s), now %s (%s → %s) %s", where, a.Action, dashEmpty(a.Current), dashEmpty(a.Desired),
			n.Action, dashEmpty(n.Current), dashEmpty(n.Desired), n.Reason))
	}
	return ""
}
