package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func init() { commands = append(commands, approveCmd) }

func approveCmd(a *app) *cobra.Command {
	var ap workflows.Approval
	var sf signFlags
	var acceptUnbound bool
	cmd := &cobra.Command{
		Use:   "approve WORKFLOW_ID --plan-digest DIGEST --reason TEXT [--sign-key KEY | --id-token-command CMD]",
		Short: "Approve the plan you reviewed at a rollout's gate, and only that plan",
		Long: `Approves one plan at a rollout's gate: the one whose full digest
--plan-digest names (starter status, watch --until-gate and a dry run print
it). Without --plan-digest, on a terminal, approve shows the gate's plan,
its full digest and what the digest binds, and approves that digest only
once you type its first 12 characters back; when stdin is not a terminal
it approves nothing, prints the gate's stage and full digest and exits 2,
so that you approve what you reviewed, not whatever the gate shows when
the approval arrives. A prefix is refused:
short digests of two plans can be made to collide. If the gate shows
another stage or plan when the approval arrives (someone approved it and
the rollout moved on, or it was started again with another plan), the
approval is refused (exit 1) with what the gate shows now, and nothing is
approved.

The approval is signed with your own key: an SSH signature (the format git
uses, namespace fleetsaga) over the Temporal namespace, rollout, stage, plan digest, decision,
reason, time and a nonce, made with --sign-key (a private key file, or the
.pub of a key ssh-agent holds) or ssh-agent's only key; or an OIDC ID token
bound to that statement: --id-token-command is run by sh with
` + approval.IDTokenNonceEnv + ` set to the statement's digest, asks your
identity provider for a token with that nonce and prints it; a token
without it is refused. The token is sent sealed to the workers' key
(--approval-token-public-key), so Temporal's history never holds it.
The worker's VerifyApproval checks the approval against the worker's
allowed signers and the gate's policy (how many
distinct approvers, four eyes, who may approve) and refuses an unsigned,
unknown, expired, replayed, unbound or misdirected one (exit 1, with the
reason); a refused approval changes nothing. A gate that needs several
approvers stays closed until they all approved: starter status shows what
it still needs. With no key at hand the approval goes unsigned, which only
a worker with no keyring accepts (README, "Approvals").

The ledger records who (the person the worker's keyring names, its key
fingerprint and the signature), why and the plan's digest. When the stage
runs, a target whose state no longer matches the approved plan is not
touched (outcome PlanDrift).`,
		Example: `  starter watch fleetsaga/rollout/plan/q3 --until-gate   # waits for the gate, prints its plan and digest
  starter approve fleetsaga/rollout/plan/q3 --plan-digest 3f9a…(64 hex) --reason "canary sleds healthy" --sign-key ~/.ssh/id_ed25519.pub
  starter approve fleetsaga/rollout/plan/q3 --plan-digest 3f9a…(64 hex) --reason "canary sleds healthy" --approval-token-public-key /etc/fleetsaga/token.pub --id-token-command 'my-oidc-login --nonce "$` + approval.IDTokenNonceEnv + `"'`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(ap.By) == "" || strings.TrimSpace(ap.Reason) == "" {
				return usageErr("--by and --reason are required: approvals are recorded in the ledger")
			}
			ap.PlanDigest = strings.ToLower(strings.TrimSpace(ap.PlanDigest))
			if ap.PlanDigest != "" && !fullDigest(ap.PlanDigest) {
				return usageErr("--plan-digest %q: want the plan's full digest, 64 hex characters (starter status prints it); a prefix is not enough", ap.PlanDigest)
			}
			return a.control(cmd.Context(), args[0], "approved", func(c client.Client) error {
				return approveReviewedPlan(cmd.Context(), c, a.temporal.Namespace, args[0], ap, sf, acceptUnbound)
			})
		},
	}
	cmd.Flags().StringVar(&ap.By, "by", os.Getenv("USER"), "who approves (recorded as typed only by a worker with no keyring)")
	cmd.Flags().StringVar(&ap.Reason, "reason", "", "why")
	cmd.Flags().StringVar(&ap.PlanDigest, "plan-digest", "", "the full digest of the plan you reviewed (starter status prints it); without it, a terminal is shown the gate's plan and asked to confirm, a script is refused")
	cmd.Flags().BoolVar(&acceptUnbound, "accept-unbound-plan", false, "approve a gate whose digest binds its rows' labels only (a rollout on a build from before plans were bound to their inputs), having reviewed the plan file itself")
	sf.bind(cmd)
	return cmd
}

// approveReviewedPlan approves the plan ap.PlanDigest names at the stage
// the gate shows now; without a digest it asks a terminal to confirm the
// gate's plan (approve_confirm.go), and otherwise approves nothing and
// answers the gate's full digest. The signature binds the digest the operator
// gave: if the gate shows another plan, the workflow refuses it.
func approveReviewedPlan(ctx context.Context, c client.Client, namespace, id string, ap workflows.Approval, sf signFlags, acceptUnbound bool) error {
	if ap.PlanDigest == "" {
		sp, err := queryGatePlan(ctx, c, id)
		if err != nil {
			return err // Temporal's answer (no such rollout, access refused) says more than the missing flag
		}
		if sp == nil {
			return usageErr("--plan-digest is required, and %s shows no plan at a gate now: nothing approved", id)
		}
		p := approvePrompt()
		if !p.terminal {
			return usageErr("--plan-digest is required: stage %s's plan at the gate is %s; review it (starter status %s) and approve with --plan-digest %s. Nothing approved",
				sp.Stage, sp.Digest, id, sp.Digest)
		}
		if !p.confirmGatePlan(id, *sp) {
			return usageErr("not confirmed: nothing approved")
		}
		ap.PlanDigest = sp.Digest
	}
	if sp := awaitGatePlan(ctx, c, id); sp != nil {
		fmt.Fprintf(os.Stderr, "stage %s's plan at the gate: %s\n", sp.Stage, sp.Digest)
		if !sp.Bound() && !acceptUnbound {
			return usageErr("stage %s's plan at the gate binds its rows' labels only, not the images' bytes nor the targets its inputs act on "+
				"(the rollout runs on a build from before plans were bound): review the plan file itself, then approve with --accept-unbound-plan. Nothing approved", sp.Stage)
		}
		ap.Stage = sp.Stage
		signed, err := signStatement(ctx, sf, approval.Gate{TemporalNamespace: namespace, Rollout: id, Run: sp.RunID, Stage: sp.Stage, PlanDigest: ap.PlanDigest, Decision: approval.DecisionApprove}, ap.Reason)
		if err != nil {
			return err
		}
		ap.Signed = signed
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: workflows.ApproveUpdate, Args: []any{ap},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return err
	}
	return h.Get(ctx, nil)
}

// fullDigest: a plan's digest, SHA-256 in lower-case hex.
func fullDigest(d string) bool {
	return len(d) == 64 && strings.Trim(d, "0123456789abcdef") == ""
}
