package rollout

import (
	"fmt"
	"strings"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// gateDetails is the Web UI's current details at a gate: that it awaits
// approval, the stage, its plan and digest, the command that approves it,
// and what the gate still needs. (The static summary, fixed at the start,
// can only say where the gates are: RolloutInput.StartSummary.)
func gateDetails(id string, state workflows.State, stage string, sp StagePlan) string {
	s := fmt.Sprintf("**%s** — **awaiting approval** of stage %s, plan %s (phase %s)\n\n%s\nApprove: `starter approve %s --plan-digest %s --reason \"…\"` (`starter status %s` shows the plan)\n",
		state, stage, sp.Digest[:12], workflows.PhaseAwaitingApproval, gatePlanDetails(sp), id, sp.Digest, id) // approve needs the full digest
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
	if lines := sp.BoundLines(); len(lines) > 0 {
		b.WriteString("\nThe digest binds " + lines[0] + "\n")
		for _, l := range lines[1:] {
			b.WriteString("- " + l + "\n")
		}
	}
	return b.String()
}

func dashEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
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
