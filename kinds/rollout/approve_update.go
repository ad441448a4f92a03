package rollout

import (
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Bounds of one approve update's fields. An accepted update's argument is
// kept in the history, twice with the activity that verifies it, and
// Temporal terminates a run whose history passes 50 MiB: each field is
// bounded by what it can honestly hold.
const (
	// maxApprovalByBytes: a person's name, or an identity
	// "oidc:<issuer URL>#<subject>" (OpenID Connect Core 2: a subject is
	// at most 255 characters).
	maxApprovalByBytes = 512
	// maxApprovalReasonBytes: a sentence or two and a ticket link; the
	// signed statement carries it once more.
	maxApprovalReasonBytes = 4 << 10
	// maxApprovalStageBytes: a plan's stage name.
	maxApprovalStageBytes = 256
	// maxApprovalDigestBytes: a hex SHA-256.
	maxApprovalDigestBytes = 64
	// maxStatementBytes: the statement's JSON, rollout ID, stage, digest,
	// nonce and time around a reason of maxApprovalReasonBytes.
	maxStatementBytes = 8 << 10
	// maxSSHSigBytes: an armored SSHSIG holds the public key and one
	// signature, under 3 KiB even for an RSA 8192 key.
	maxSSHSigBytes = 8 << 10
	// maxIDTokenBytes: a JWT and its groups claim, which identity
	// providers cap (Entra ID at 200 groups) to stay in an HTTP header.
	maxIDTokenBytes = 16 << 10
	// maxSealedIDTokenBytes: such a token sealed (approval.SealIDToken adds
	// an X25519 share of 32 bytes and an AES-GCM tag of 16), in base64.
	maxSealedIDTokenBytes = (maxIDTokenBytes + 32 + 16 + 2) / 3 * 4
)

// maxRefusedApprovals is how many approvals one run refuses before it
// accepts no more. Each refusal the handler gives is in the history (the
// update and its verify activity) and counts against Temporal's limit of
// updates per run (2,000 by default): past this many, the gate waits
// without taking more, rather than the run being terminated or a real
// approval finding the limit used up. Far above what honest approvers
// get wrong (an expired or mistyped approval, each once).
const maxRefusedApprovals = 50

// approve is the approve update's handler; it counts the approvals it
// refuses (the validator may not: it only reads the workflow's state).
func (g *approvalGate) approve(ctx workflow.Context, raw json.RawMessage) error {
	ap, err := decodeApproval(raw)
	if err == nil {
		err = g.awaitPlan(ctx, ap)
	}
	if err == nil {
		err = g.verifyApproval(ctx, ap)
	}
	if err != nil {
		g.refusals++
	}
	return err
}

// validate is the approve update's validator: what it refuses never
// reaches the history. It reads the update's bytes strictly
// (approve_decode.go), then only the gate's state.
func (g *approvalGate) validate(raw json.RawMessage) error {
	ap, err := decodeApprovalStrict(raw)
	if err != nil {
		return err
	}
	if g.stage == "" {
		return fmt.Errorf("rollout %s is not waiting for an approval", g.in.Name)
	}
	if g.refusals >= maxRefusedApprovals {
		return fmt.Errorf("rollout %s refused %d approvals and accepts no more: an operator cancels it and starts the plan again", g.in.Name, g.refusals)
	}
	if ap.Signed != nil && ap.Signed.IDToken != "" {
		// Refused here, so that the token never reaches the history.
		return temporal.NewNonRetryableApplicationError(approval.ErrRawIDToken.Error(), failure.ApprovalRefused, nil, string(approval.ReasonUnsealedToken))
	}
	if err := checkApprovalSizes(ap); err != nil {
		return err
	}
	if ap.By == "" || ap.Reason == "" {
		return fmt.Errorf("an approval needs who (by) and why (reason)")
	}
	if g.starter != "" && (ap.Signed == nil || ap.Signed.SSHSig == "" && ap.Signed.SealedIDToken == "") {
		// The activity's refusal, given before the update reaches the history.
		msg := fmt.Sprintf("rollout %s: its start was signed, so only signed approvals count: sign it (starter approve with --sign-key, an ssh-agent key or --id-token-command)", g.in.Name)
		return temporal.NewNonRetryableApplicationError(msg, failure.ApprovalRefused, nil, string(approval.ReasonUnsigned))
	}
	if g.plan == nil {
		return nil // the handler waits for the plan, then checks the digest
	}
	return g.checkApprovedDigest(ap)
}

func checkApprovalSizes(ap workflows.Approval) error {
	fields := []struct {
		name, value string
		max         int
	}{
		{"by", ap.By, maxApprovalByBytes}, {"reason", ap.Reason, maxApprovalReasonBytes},
		{"stage", ap.Stage, maxApprovalStageBytes}, {"plan digest", ap.PlanDigest, maxApprovalDigestBytes},
	}
	if s := ap.Signed; s != nil {
		fields = append(fields, []struct {
			name, value string
			max         int
		}{{"signed statement", s.Payload, maxStatementBytes}, {"SSH signature", s.SSHSig, maxSSHSigBytes}, {"sealed ID token", s.SealedIDToken, maxSealedIDTokenBytes}}...)
	}
	for _, f := range fields {
		if len(f.value) > f.max {
			return fmt.Errorf("the approval's %s is %d bytes, more than the %d a gate accepts", f.name, len(f.value), f.max)
		}
	}
	return nil
}
