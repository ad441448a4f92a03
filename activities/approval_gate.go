package activities

import (
	"context"
	"slices"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// GateApprovalsInput names one gate of one rollout run.
type GateApprovalsInput struct {
	Gate approval.Gate `json:"gate"`
	// RunID is the rollout's original run ID, which a reset keeps (see
	// VerifyApprovalInput.RunID).
	RunID string `json:"runId,omitempty"`
}

// GateApprovals answers who has already approved the plan a gate shows,
// from the ledger: the approvals recorded under the gate's key for that
// plan's digest. A rollout reset to a point before its gate replays its
// history without the approvals given after that point, while the ledger
// keeps them (and refuses the same approver a second time); the gate
// counts them from here. Signed approvals count by their principal; an
// unsigned one (method "unsigned", typed name) only on a worker without a
// keyring, where it is the only kind there is.
func (a *ApprovalActivities) GateApprovals(ctx context.Context, in GateApprovalsInput) ([]string, error) {
	all, err := a.Store.Approvals(ctx, in.Gate.Rollout)
	if err != nil {
		return nil, err
	}
	key := gateStageKey(in.Gate.Stage, in.RunID)
	var out []string
	for _, ap := range all {
		if ap.Stage != key || ap.PlanDigest != in.Gate.PlanDigest {
			continue
		}
		who := ap.Principal
		if who == "" && ap.Method == ledger.MethodUnsigned && !a.Keyring.Configured() {
			who = ap.By
		}
		if who != "" && !slices.Contains(out, who) {
			out = append(out, who)
		}
	}
	return out, nil
}
