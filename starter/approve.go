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
	cmd := &cobra.Command{
		Use:   "approve WORKFLOW_ID --reason TEXT [--sign-key KEY | --id-token FILE] [--plan-digest D]",
		Short: "Approve the plan a rollout shows at its gate, and only that plan",
		Long: `Approves the plan the gate shows, and only that one. approve reads the gate's
stage and plan (the same plan starter status and watch --until-gate print),
prints "stage S's plan at the gate: DIGEST", and binds the approval to that
stage and digest. If the gate shows another stage or plan when the approval
arrives (someone approved it and the rollout moved on to its next gate, or
the rollout was started again with another plan), the approval is refused
(exit 1) with what the gate shows now, and nothing is approved: look at the
plan again and approve again.

With --plan-digest the approval binds to the plan you reviewed instead (its
digest or first 12+ characters, from starter status or a dry run): it is
refused unless the gate still shows that plan.

The approval is signed with your own key: an SSH signature (the format git
uses, namespace fleetsaga) over the rollout, stage, plan digest, decision,
reason, time and a nonce, made with --sign-key (a private key file, or the
.pub of a key ssh-agent holds) or ssh-agent's only key; or, with --id-token,
your identity provider's OIDC ID token. The worker's VerifyApproval checks
it against the worker's allowed signers and the gate's policy (how many
distinct approvers, four eyes, who may approve) and refuses an unsigned,
unknown, expired, replayed or misdirected one (exit 1, with the reason);
a refused approval changes nothing. A gate that needs several approvers
stays closed until they all approved: starter status shows what it still
needs. With no key at hand the approval goes unsigned, which only a worker
with no keyring accepts (README, "Approvals").

The ledger records who (the principal the worker's keyring names, its key
fingerprint and the signature), why and the plan's digest. When the stage
runs, a target whose state no longer matches the approved plan is not
touched (outcome PlanDrift).`,
		Example: `  starter watch fleetsaga/rollout/plan/q3 --until-gate   # waits for the gate, prints its plan
  starter approve fleetsaga/rollout/plan/q3 --reason "canary sleds healthy" --sign-key ~/.ssh/id_ed25519.pub
  starter approve fleetsaga/rollout/plan/q3 --reason "canary sleds healthy" --id-token ~/.cache/fleetsaga/id-token
  starter approve fleetsaga/rollout/plan/q3 --by alice --reason "reviewed" --plan-digest 3f9a1c0e7b2d`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(ap.By) == "" || strings.TrimSpace(ap.Reason) == "" {
				return usageErr("--by and --reason are required: approvals are recorded in the ledger")
			}
			ap.PlanDigest = strings.ToLower(strings.TrimSpace(ap.PlanDigest))
			if ap.PlanDigest != "" && !digestPrefix(ap.PlanDigest) {
				return usageErr("--plan-digest %q: want the plan's digest or its first 12+ hex characters (starter status prints it)", ap.PlanDigest)
			}
			return a.control(cmd.Context(), args[0], "approved", func(c client.Client) error {
				return approveShownPlan(cmd.Context(), c, args[0], ap, sf)
			})
		},
	}
	cmd.Flags().StringVar(&ap.By, "by", os.Getenv("USER"), "who approves")
	cmd.Flags().StringVar(&ap.Reason, "reason", "", "why")
	cmd.Flags().StringVar(&ap.PlanDigest, "plan-digest", "", "approve only this plan (its digest or its first 12+ characters, from starter status) instead of the one the gate shows now")
	sf.bind(cmd)
	return cmd
}

// approveShownPlan approves the stage and plan the gate shows now, as
// printed (or the operator's --plan-digest): the workflow refuses the
// approval if its gate shows another by the time it arrives. With no plan
// to show (no gate, or still planning) the approval goes without one, and
// the workflow's refusal says why. The signature binds the gate's full
// digest, and only when the plan approved is the one the gate shows.
func approveShownPlan(ctx context.Context, c client.Client, id string, ap workflows.Approval, sf signFlags) error {
	send := ap
	if sp := awaitGatePlan(ctx, c, id); sp != nil {
		fmt.Fprintf(os.Stderr, "stage %s's plan at the gate: %s\n", sp.Stage, shortDigest(sp.Digest))
		send.Stage = sp.Stage
		if send.PlanDigest == "" {
			send.PlanDigest = sp.Digest
		}
		if strings.HasPrefix(sp.Digest, send.PlanDigest) {
			signed, err := signStatement(sf, id, sp.Stage, sp.Digest, approval.DecisionApprove, ap.Reason)
			if err != nil {
				return err
			}
			send.Signed = signed
		}
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: workflows.ApproveUpdate, Args: []any{send},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return err
	}
	return h.Get(ctx, nil)
}

// digestPrefix: a plan's digest (SHA-256 in lower-case hex) or its first
// 12+ characters, as the workflow compares them.
func digestPrefix(d string) bool {
	return len(d) >= 12 && len(d) <= 64 && strings.Trim(d, "0123456789abcdef") == ""
}
