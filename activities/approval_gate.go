package activities

import (
	"context"
	"errors"
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
// a worker without a keyring, where it is the only kind there is. The
// approvals a pass of the gate spent (SpendGateApprovals) do not count.
func (a *ApprovalActivities) GateApprovals(ctx context.Context, in GateApprovalsInput) ([]string, error) {
	in.Gate.Decision, in.Gate.Run, in.Gate.TemporalNamespace = approval.DecisionApprove, in.RunID, namespace(ctx)
	if !a.Keyring.Configured() {
		return a.unsignedApprovers(ctx, in)
	}
	return countedApprovers(ctx, a.Store, a.Keyring, gateStageKey(in.Gate.Stage, in.RunID), in.Gate)
}

func (a *ApprovalActivities) unsignedApprovers(ctx context.Context, in GateApprovalsInput) ([]string, error) {
	key := gateStageKey(in.Gate.Stage, in.RunID)
	spent, err := a.Store.GatePassedThrough(ctx, in.Gate.Rollout, key)
	if err != nil {
		return nil, err
	}
	all, err := a.Store.Approvals(ctx, in.Gate.Rollout)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ap := range all {
		if ap.Stage == key && ap.Seq > spent && ap.PlanDigest == in.Gate.PlanDigest && ap.Method == ledger.MethodUnsigned && ap.By != "" && !slices.Contains(out, ap.By) {
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
// counts: which one is the original, the rows cannot say. The approvals
// a pass of the gate spent are not listed.
func countedApprovers(ctx context.Context, store *ledger.Store, keyring *approval.Keyring, key string, gate approval.Gate) ([]string, error) {
	spent, err := store.GatePassedThrough(ctx, gate.Rollout, key)
	if err != nil {
		return nil, err
	}
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
		if ap.Stage != key || ap.Seq <= spent || ap.PlanDigest != gate.PlanDigest {
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

// SpendGateApprovals records that the gate opened on the approvals the
// ledger holds for it: they approved this pass of its stage. A run an
// operator resets to before the gate then needs new ones (GateApprovals
// no longer counts them, VerifyApproval refuses them again). The pass
// names the current run (a reset changes it, the original run ID stays):
// a reset run whose gate would open again on the approvals another run's
// pass spent (a reset to the task that scheduled this activity) is
// refused, Spent, and its gate waits for new approvals. Idempotent for
// its own run.
func (a *ApprovalActivities) SpendGateApprovals(ctx context.Context, in GateApprovalsInput) error {
	through, err := a.Store.RecordGatePass(ctx, in.Gate.Rollout, gateStageKey(in.Gate.Stage, in.RunID), currentRun(ctx))
	if errors.Is(err, ledger.ErrSpent) {
		return refusal(ctx, in.Gate, &approval.Refusal{Reason: approval.ReasonSpent,
			Msg: "the gate's approvals opened it for a pass of its stage that already ran (before a reset): it needs new approvals"})
	}
	if err != nil {
		return err
	}
	activity.GetLogger(ctx).Info("gate opened: its approvals are spent", "rollout", in.Gate.Rollout, "stage", in.Gate.Stage, "through seq", through)
	return nil
}

// currentRun is the run ID of the workflow the activity runs for, as the
// worker knows it (never workflow input): a reset changes it. A variable
// so tests can play a reset run.
var currentRun = func(ctx context.Context) string { return activity.GetInfo(ctx).WorkflowExecution.RunID }
