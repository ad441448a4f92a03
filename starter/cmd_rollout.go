package main

import (
	"github.com/spf13/cobra"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/internal/plan"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func init() {
	commands = append(commands, func(a *app) *cobra.Command {
		var sf startFlags
		var sign signFlags
		cmd := &cobra.Command{
			Use:   "rollout PLAN.yaml",
			Short: "Run a rollout plan: stages of updates, in order, with gates",
			Long: `Runs a YAML plan as one parent workflow. Each stage lists updates of one kind
(each entry is that kind's input), with a concurrency, an optional approval
gate (starter approve), a failure budget and exclusive groups of targets that
never run at once. The plan is validated fully before anything starts.

The start is signed like an approval (--sign-key, ssh-agent, or --id-token-command):
the signature covers the plan's digest, so the worker knows who started
which plan, and a gate with four eyes refuses that person's approval.`,
			Example: `  starter rollout plans/q3-firmware.yaml --wait
  starter approve fleetsaga/rollout/plan/q3-firmware --by alice --reason "canaries healthy"
  starter pause fleetsaga/rollout/plan/q3-firmware`,
			Args: exactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				in, err := plan.Load(args[0])
				if err != nil {
					return usageErr("%v", err)
				}
				u := update{Kind: workflows.KindRollout, Target: "plan/" + in.Name, Workflow: rollout.Rollout, Input: in}
				if !sf.dryRun {
					digest, err := in.StartDigest()
					if err != nil {
						return err
					}
					signed, err := signStatement(cmd.Context(), sign, approval.Gate{TemporalNamespace: a.temporal.Namespace, Rollout: workflows.WorkflowID(u.Kind, u.Target), PlanDigest: digest, Decision: approval.DecisionStart}, "start plan "+in.Name)
					if err != nil {
						return err
					}
					withSig := in // the request digest stays the plan's (update.Arg)
					withSig.StartSignature = signed
					u.Arg = withSig
				}
				return a.startUpdate(cmd, u, sf)
			},
		}
		sf.bind(cmd)
		sign.bind(cmd)
		return cmd
	})
}
