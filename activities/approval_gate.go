package activities

import (
	"context"
	"slices"

	"go.temporal.io/sdk/activity"

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
// keeps them; the gate counts them from here. The ledger is not a key: a
// signed approval counts only once its signature verifies again against
// the worker's keyring, as the person who signed it (a row written with
// SQL does not); an unsigned one (method "unsigned", typed name) only on
// a worker without a keyring, where it is the only kind there is.
func (a *ApprovalActivities) GateApprovals(ctx context.Context, in GateApprovalsInput) ([]string, error) {
	in.Gate.Decision, in.Gate.Run = approval.DecisionApprove, in.RunID
	if !a.Keyring.Configured() {
		return a.unsignedApprovers(ctx, in)
	}
	return countedApprovers(ctx, a.Store, a.Keyring, gateStageKey(in.Gate.Stage, in.RunID), in.Gate)
}

func (a *ApprovalActivities) unsignedApprovers(ctx context.Context, in GateApprovalsInput) ([]string, error) {
	all, err := a.Store.Approvals(ctx, in.Gate.Rollout)
	if err != nil {
		return nil, err
	}
	key := gateStageKey(in.Gate.Stage, in.RunID)
	var out []string
	for _, ap := range all {
		if ap.Stage == key && ap.PlanDigest == in.Gate.PlanDigest && ap.Method == ledger.MethodUnsigned && ap.By != "" && !slices.Contains(out, ap.By) {
			out = append(out, ap.By)
		}
	}
	return out, nil
}

// countedApprovers lists the persons whose approvals recorded under the
// ledger stage key for gate's plan verify again against keyring; a row
// that does not is logged and not counted. A signature is used once: a
// replay key that two rows of the rollout hold was copied (by a role that
// may drop the unique index, and set seq to come first), and neither row
// counts: which one is the original, the rows cannot say.
func countedApprovers(ctx context.Context, store *ledger.Store, keyring *approval.Keyring, key string, gate approval.Gate) ([]string, error) {
	all, err := store.Approvals(ctx, gate.Rollout)
	if err != nil {
		return nil, err
	}
	uses := map[string]int{}
	for _, ap := range all {
		uses[ap.ReplayKey]++
	}
	var out []string
	for _, ap := range all {
		if ap.Stage != key || ap.PlanDigest != gate.PlanDigest {
			continue
		}
		if uses[ap.ReplayKey] > 1 {
			activity.GetLogger(ctx).Warn("a recorded approval does not count: another row holds its signature", "rollout", gate.Rollout,
				"stage", gate.Stage, "seq", ap.Seq, "recorded principal", ap.Principal)
			continue
		}
		who, err := keyring.Reverify(approval.Recorded{Method: approval.Method(ap.Method), Principal: ap.Principal,
			KeyFingerprint: ap.KeyFingerprint, Signature: ap.Signature, Payload: ap.Payload, ReplayKey: ap.ReplayKey}, gate)
		if err != nil {
			activity.GetLogger(ctx).Warn("a recorded approval does not count: it does not verify again", "rollout", gate.Rollout,
				"stage", gate.Stage, "seq", ap.Seq, "recorded principal", ap.Principal, "error", err)
			continue
		}
		if !slices.Contains(out, who.Name) {
			out = append(out, who.Name)
		}
	}
	return out, nil
}
