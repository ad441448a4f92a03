package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// ApprovalActivities verify signed starts and approvals against the
// worker's keyring (configuration, never workflow input) and record the
// ones that pass, with who signed and how, in the ledger.
type ApprovalActivities struct {
	Store   *ledger.Store
	Keyring *approval.Keyring
	// Minimum is the worker's own least policy (configuration): every
	// gate it checks is at least this strict.
	Minimum approval.Minimum
}

// ApprovalMinimum answers the worker's Minimum: the rollout asks once,
// so the policy it applies is in its history and replays as it was.
func (a *ApprovalActivities) ApprovalMinimum(context.Context) (approval.Minimum, error) {
	return a.Minimum, nil
}

// VerifyApprovalInput is one signed approval at a gate, with what the
// workflow knows of that gate.
type VerifyApprovalInput struct {
	Gate   approval.Gate   `json:"gate"`
	Signed approval.Signed `json:"signed"`
	Policy approval.Policy `json:"policy"`
	// Starter is the principal who started the rollout (VerifyStart's
	// answer; "" when the start was not signed), for four eyes.
	Starter string `json:"starter,omitempty"`
	// By and Reason are what the approver typed: a worker with no keyring
	// records them for an unsigned approval (a signed one records the
	// keyring's principal and the signed reason).
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
	// RunID is the rollout run's original run ID: the ledger keys a gate's
	// approvals by stage and run ("<stage>@run:<run ID>"), as a plan's
	// name, and so its rollout's workflow ID, is reused by its later runs;
	// the signed statement must name it (approval.Statement.Run).
	// "": keyed by the stage alone.
	RunID string `json:"runId,omitempty"`
}

// VerifyApprovalResult is an approval that counts.
type VerifyApprovalResult struct {
	Principal approval.Principal `json:"principal"`
	Reason    string             `json:"reason"`
	// Needed is what the gate still needs once this approval counts
	// (Needed.Open(): the gate may open).
	Needed approval.Needed `json:"needed"`
}

// VerifyApproval checks a signed approval (signature against the keyring,
// the gate it is for, its age, replay, the gate's policy) and records it
// in the ledger. A refusal is a non-retryable failure.ApprovalRefused
// whose details are the approval.Reason, and records nothing. Retried
// after its write, it answers as the first time.
func (a *ApprovalActivities) VerifyApproval(ctx context.Context, in VerifyApprovalInput) (VerifyApprovalResult, error) {
	in.Gate.Decision, in.Gate.Run, in.Gate.TemporalNamespace = approval.DecisionApprove, in.RunID, namespace(ctx)
	in.Policy = a.Minimum.Stricter(in.Policy)
	if !a.Keyring.Configured() {
		return a.acceptUnsigned(ctx, in)
	}
	key := gateStageKey(in.Gate.Stage, in.RunID)
	v, needed, retry, err := a.Keyring.Check(ctx, in.Signed, in.Gate, in.Policy, in.Starter, gateHistory{a.Store, a.Keyring, key, in.Gate.Stage})
	if err != nil {
		return VerifyApprovalResult{}, refusal(ctx, in.Gate, err)
	}
	if !retry {
		if err := a.Store.RecordGateApproval(ctx, approvalRow(key, v), currentRun(ctx)); err != nil {
			if errors.Is(err, ledger.ErrReplayed) { // another approval took the key meanwhile
				return VerifyApprovalResult{}, refusal(ctx, in.Gate, &approval.Refusal{Reason: approval.ReasonReplayed, Msg: "this signed approval was used before: sign a new one"})
			}
			return VerifyApprovalResult{}, spentRefusal(ctx, in.Gate, err)
		}
	}
	activity.GetLogger(ctx).Info("approval accepted", "rollout", in.Gate.Rollout, "stage", in.Gate.Stage,
		"principal", v.Principal.Name, "key", v.Principal.KeyFingerprint, "still needed", needed.String())
	return VerifyApprovalResult{Principal: v.Principal, Reason: v.Statement.Reason, Needed: needed}, nil
}

// acceptUnsigned is VerifyApproval on a worker with no keyring: nothing
// can be proved, so an approval is recorded as typed, method "unsigned"
// (a signature sent along is not checked, nor stored), and only at a gate
// whose policy is the default one: counting distinct approvers, four eyes
// or an allowed list over typed names would only look like a control.
func (a *ApprovalActivities) acceptUnsigned(ctx context.Context, in VerifyApprovalInput) (VerifyApprovalResult, error) {
	if in.Starter != "" {
		return VerifyApprovalResult{}, refusal(ctx, in.Gate, &approval.Refusal{Reason: approval.ReasonNoKeyring,
			Msg: "this rollout's start was verified, so only verified approvals count, and this worker has no approval signers configured (--approval-allowed-signers, --approval-oidc-issuer)"})
	}
	if p := in.Policy; p.Approvers > 1 || p.FourEyes || len(p.Allowed) > 0 {
		return VerifyApprovalResult{}, refusal(ctx, in.Gate, &approval.Refusal{Reason: approval.ReasonNoKeyring,
			Msg: "this stage's policy needs verified approvers, and the worker has no approval signers configured (--approval-allowed-signers, --approval-oidc-issuer)"})
	}
	activity.GetLogger(ctx).Warn("approval accepted UNSIGNED: the worker has no approval keyring, so who approved is not proved",
		"rollout", in.Gate.Rollout, "stage", in.Gate.Stage, "by", in.By, "signature sent", in.Signed.SSHSig != "" || in.Signed.SealedIDToken != "" || in.Signed.IDToken != "")
	err := a.Store.RecordGateApproval(ctx, ledger.Approval{Rollout: in.Gate.Rollout, Stage: gateStageKey(in.Gate.Stage, in.RunID), By: in.By, Reason: in.Reason,
		PlanDigest: in.Gate.PlanDigest, Method: ledger.MethodUnsigned}, currentRun(ctx))
	if err != nil {
		return VerifyApprovalResult{}, spentRefusal(ctx, in.Gate, err)
	}
	return VerifyApprovalResult{Principal: approval.Principal{Name: in.By, Method: approval.MethodUnsigned}, Reason: in.Reason}, nil
}

// VerifyStartInput is the signature `starter rollout` sent with a plan.
type VerifyStartInput struct {
	Rollout string `json:"rollout"` // the rollout's workflow ID
	// RunID names this run of the rollout in the ledger (a plan's name is
	// reused by its later runs).
	RunID string `json:"runId"`
	// PlanDigest is approval.DigestJSON of the RolloutInput without its
	// signature, as the workflow computes it.
	PlanDigest string          `json:"planDigest"`
	Signed     approval.Signed `json:"signed"`
}

// VerifyStart checks who started a rollout and with which plan, records
// it in the ledger (stage "start:<run ID>"), and returns the principal
// (the starter four eyes excludes). A refusal is as VerifyApproval's; a
// worker with no keyring verifies nothing and answers no principal.
func (a *ApprovalActivities) VerifyStart(ctx context.Context, in VerifyStartInput) (approval.Principal, error) {
	if in.Signed.IDToken != "" && !a.Keyring.Configured() {
		// Refused even here: the token is exposed in the history (a run
		// started before the workflow refused it itself).
		return approval.Principal{}, refusal(ctx, approval.Gate{Rollout: in.Rollout, PlanDigest: in.PlanDigest, Decision: approval.DecisionStart}, approval.ErrRawIDToken)
	}
	if !a.Keyring.Configured() {
		// Nothing to check against: the start counts as unsigned (its
		// starter unknown), as the starter's ssh-agent may sign by default.
		activity.GetLogger(ctx).Warn("rollout start not verified: the worker has no approval keyring", "rollout", in.Rollout)
		return approval.Principal{}, nil
	}
	gate := approval.Gate{TemporalNamespace: namespace(ctx), Rollout: in.Rollout, PlanDigest: in.PlanDigest, Decision: approval.DecisionStart}
	stage := startStagePrefix + in.RunID
	v, _, retry, err := a.Keyring.Check(ctx, in.Signed, gate, approval.Policy{}, "", gateHistory{a.Store, a.Keyring, stage, ""})
	if err != nil {
		return approval.Principal{}, refusal(ctx, gate, err)
	}
	if retry {
		return v.Principal, nil
	}
	if err := a.Store.RecordApproval(ctx, approvalRow(stage, v)); err != nil {
		if errors.Is(err, ledger.ErrReplayed) {
			return approval.Principal{}, refusal(ctx, gate, &approval.Refusal{Reason: approval.ReasonReplayed, Msg: "this signed start was used before: sign a new one"})
		}
		return approval.Principal{}, err
	}
	return v.Principal, nil
}

// namespace is the Temporal namespace of the workflow the activity runs
// for: the worker's own answer, never workflow input, so an approval
// signed for a rollout in another namespace does not verify here.
func namespace(ctx context.Context) string { return activity.GetInfo(ctx).WorkflowNamespace }

// RawStartInput is a start that came with an ID token in plain text:
// its statement, never the token.
type RawStartInput struct {
	Rollout    string `json:"rollout"`
	RunID      string `json:"runId"`
	PlanDigest string `json:"planDigest"`
	Payload    string `json:"payload"`
}

// RefuseRawStart marks a raw-token start's statement exposed in the
// ledger, so no sealed copy of that token counts later (a history reader
// could seal one), and refuses the start (UnsealedToken). The workflow
// sends the statement alone: the token stays in its start event only.
func (a *ApprovalActivities) RefuseRawStart(ctx context.Context, in RawStartInput) error {
	gate := approval.Gate{TemporalNamespace: namespace(ctx), Rollout: in.Rollout, PlanDigest: in.PlanDigest, Decision: approval.DecisionStart}
	return refusal(ctx, gate, approval.Expose(ctx, in.Payload, gate, gateHistory{a.Store, a.Keyring, startStagePrefix + in.RunID, ""}))
}

func approvalRow(stage string, v approval.Verified) ledger.Approval {
	return ledger.Approval{Rollout: v.Statement.Rollout, Stage: stage, By: v.Principal.Name, Reason: v.Statement.Reason,
		PlanDigest: v.Statement.PlanDigest, Principal: v.Principal.Name, Method: string(v.Principal.Method),
		KeyFingerprint: v.Principal.KeyFingerprint, Signature: v.Signature, Payload: v.Payload, ReplayKey: v.ReplayKey}
}

// spentRefusal refuses an approval that arrived once this run's gate had
// opened (ledger.ErrSpent): it would approve no pass, and after a reset
// it would open the gate for one it was not given for.
func spentRefusal(ctx context.Context, gate approval.Gate, err error) error {
	if !errors.Is(err, ledger.ErrSpent) {
		return err
	}
	return refusal(ctx, gate, &approval.Refusal{Reason: approval.ReasonSpent,
		Msg: "this gate opened before this approval was recorded: it approves no pass; after a reset, sign a new one for the gate then"})
}

// refusal makes a *approval.Refusal the catalogue's non-retryable error;
// anything else (the identity provider or the ledger unreachable) stays
// retryable. Messages never hold a token or key material.
func refusal(ctx context.Context, gate approval.Gate, err error) error {
	var r *approval.Refusal
	if !errors.As(err, &r) {
		return err
	}
	activity.GetLogger(ctx).Warn("approval refused", "rollout", gate.Rollout, "stage", gate.Stage, "reason", string(r.Reason))
	return temporal.NewNonRetryableApplicationError(r.Error(), failure.ApprovalRefused, nil, string(r.Reason))
}

// gateHistory answers approval.History for one gate whose ledger stage
// is key (a gate's "<stage>@run:<run ID>", a start's "start:<run ID>"):
// an approval recorded under key is this gate's (a retry, not a replay),
// and only the approvals under key that verify again count as given.
type gateHistory struct {
	store      *ledger.Store
	keyring    *approval.Keyring
	key, stage string
}

func (h gateHistory) Used(ctx context.Context, replayKey string) (*approval.Use, error) {
	a, err := h.store.ApprovalByReplayKey(ctx, replayKey)
	if a == nil || err != nil {
		return nil, err
	}
	u := &approval.Use{Rollout: a.Rollout, Stage: a.Stage, Principal: a.Principal, Payload: a.Payload}
	if u.Stage != h.key {
		return u, nil
	}
	spent, err := h.store.GatePassedThrough(ctx, a.Rollout, h.key)
	if err != nil {
		return nil, err
	}
	if a.Seq <= spent {
		// A reset to before the gate re-applies the approve update that
		// opened it: that approval approved the pass that ran.
		return nil, &approval.Refusal{Reason: approval.ReasonSpent,
			Msg: "this signed approval (by " + a.Principal + ") opened this gate for a pass of its stage that already ran: sign a new one for this pass"}
	}
	u.Stage = h.stage
	return u, nil
}

func (h gateHistory) Recorded(ctx context.Context, g approval.Gate, payload string) (*approval.Verified, error) {
	a, err := h.store.ApprovalByPayload(ctx, g.Rollout, h.key, payload)
	if a == nil || err != nil {
		return nil, err
	}
	p := approval.Principal{Name: a.Principal, Method: approval.Method(a.Method), KeyFingerprint: a.KeyFingerprint}
	if issuer, subject, ok := strings.Cut(a.KeyFingerprint, "#"); ok && p.Method == approval.MethodOIDC {
		p.ID = approval.OIDCIdentity(issuer, subject)
	}
	return &approval.Verified{Principal: p, Payload: a.Payload, Signature: a.Signature, ReplayKey: a.ReplayKey, RecordedAt: a.At}, nil
}

func (h gateHistory) Expose(ctx context.Context, g approval.Gate, key string) error {
	return h.store.RecordExposed(ctx, key, g.Rollout, h.key)
}

func (h gateHistory) Exposed(ctx context.Context, key string) (bool, error) {
	return h.store.Exposed(ctx, key)
}

func (h gateHistory) Approvers(ctx context.Context, g approval.Gate) ([]string, error) {
	return countedApprovers(ctx, h.store, h.keyring, h.key, g)
}

// runSep joins a gate's stage and its run in the ledger's stage column.
const runSep = "@run:"

func gateStageKey(stage, runID string) string {
	if runID == "" {
		return stage
	}
	return stage + runSep + runID
}

// startStagePrefix marks a start in the ledger's rollout_approval: its
// stage is "start:<run ID>".
const startStagePrefix = "start:"

// StoredApprovalGate is the gate a ledger approval row was signed for.
func StoredApprovalGate(a ledger.Approval) approval.Gate {
	if strings.HasPrefix(a.Stage, startStagePrefix) {
		return approval.Gate{Rollout: a.Rollout, PlanDigest: a.PlanDigest, Decision: approval.DecisionStart}
	}
	stage, run := a.Stage, ""
	if i := strings.LastIndex(stage, runSep); i >= 0 {
		stage, run = stage[:i], stage[i+len(runSep):]
	}
	return approval.Gate{Rollout: a.Rollout, Run: run, Stage: stage, PlanDigest: a.PlanDigest, Decision: approval.DecisionApprove}
}

// CheckStoredApproval re-checks a ledger approval's signature and
// statement offline (ledger.AuditVerifier's check), against signers and
// people (nil signers: against the key the signature names, which proves
// nothing to whoever can write the ledger; see approval.VerifyStored).
func CheckStoredApproval(signers approval.AllowedSigners, people approval.People) func(ledger.Approval) error {
	return func(a ledger.Approval) error {
		if err := checkStoredAsSigned(a); err != nil {
			return err
		}
		return approval.VerifyStored(signers, people, StoredRecord(a), StoredApprovalGate(a))
	}
}

// checkStoredAsSigned: a worker records a signed approval's approver as
// its principal and its reason as the signed statement's (approvalRow), so
// a row that differs names someone, or something, nobody signed.
func checkStoredAsSigned(a ledger.Approval) error {
	if a.By != a.Principal {
		return fmt.Errorf("recorded as approved by %q, but signed by principal %q", a.By, a.Principal)
	}
	var st approval.Statement
	if err := json.Unmarshal([]byte(a.Payload), &st); err != nil {
		return fmt.Errorf("stored statement does not parse: %v", err)
	}
	if a.Reason != st.Reason {
		return fmt.Errorf("recorded reason %q is not the signed statement's %q", a.Reason, st.Reason)
	}
	return nil
}

// StoredRecord is a ledger approval as approval.Recorded.
func StoredRecord(a ledger.Approval) approval.Recorded {
	return approval.Recorded{Method: approval.Method(a.Method), Principal: a.Principal, KeyFingerprint: a.KeyFingerprint,
		Signature: a.Signature, Payload: a.Payload, ReplayKey: a.ReplayKey}
}
