package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetsaga/fleetsaga/kinds/bootimage"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func init() {
	commands = append(commands, func(a *app) *cobra.Command {
		var (
			sf            startFlags
			in            bootimage.BootImageBumpInput
			canary        bool
			canaryMS      string
			canaryTimeout time.Duration
		)
		cmd := &cobra.Command{
			Use:   "bootimage-bump --cluster NAME",
			Short: "Bring a cluster's MachineSets to its release's boot images and enforce the skew",
			Long: `Waits (bounded) until the cluster is not upgrading and the golden boot image
record (ConfigMap coreos-bootimages) is stamped for its release, then patches
each MachineSet the cluster opted in (MachineConfiguration "cluster"
spec.managedBootImages, as the machine-config operator resolved it: All,
Partial by label selector, or None) whose official boot image differs from
the golden one (JSON merge patch with its resourceVersion). Owned, Windows, custom-image,
unsupported-OS-stream and unknown-arch MachineSets are skipped and counted; a
RHEL major mismatch is refused. Where the machine-config operator resolved
the opt-in in its status, its boot image controller owns those MachineSets:
the bump never patches them, reports them (ManagedByMCO) and, with
--await-mco, waits for the MCO to bring them to the golden image (bounded by
--precondition-timeout) and fails the ones it does not. A MachineSet another actor keeps reverting is
reported after the same patch was applied 3 times. The boot image version
record, the skew mode and the Upgradeable condition are the machine-config
operator's: the bump reports the skew from the operator's record and writes
none of them. With --canary, one patched MachineSet is
scaled up by one machine; if it does not join, every MachineSet patched by the
run is restored (also on cancel).`,
			Example: `  starter bootimage-bump --cluster prod-east --wait
  starter bootimage-bump --cluster prod-east --canary`,
			Args: exactArgs(0),
			RunE: func(cmd *cobra.Command, _ []string) error {
				if canary || canaryMS != "" || cmd.Flags().Changed("canary-timeout") {
					in.Canary = &bootimage.BootImageCanary{MachineSet: canaryMS, Timeout: canaryTimeout}
				}
				if err := in.Validate(); err != nil {
					return usageErr("%v", err)
				}
				return a.startUpdate(cmd, update{Kind: workflows.KindBootImageBump, Target: in.Target(),
					Artifact: in.ArtifactVersion(), Workflow: bootimage.BootImageBump, Input: in}, sf)
			},
		}
		f := cmd.Flags()
		f.StringVar(&in.Cluster, "cluster", "", "cluster name (required)")
		f.StringVar(&in.Release, "release", "", "refuse unless the cluster runs this release (x.y.z)")
		f.BoolVar(&canary, "canary", false, "prove the new image boots by scaling one patched MachineSet up by one")
		f.StringVar(&canaryMS, "canary-machineset", "", "the canary MachineSet (default: the first patched); implies --canary")
		f.DurationVar(&canaryTimeout, "canary-timeout", 20*time.Minute, "how long the canary machine may take to join")
		f.IntVar(&in.Concurrency, "concurrency", 10, "MachineSets reconciled at once")
		f.DurationVar(&in.PreconditionTimeout, "precondition-timeout", 30*time.Minute, "how long to wait for an upgrade to finish and the golden record to be stamped")
		f.DurationVar(&in.SettleInterval, "settle", 10*time.Second, "how long after a patch to look for another actor reverting it")
		f.IntVar(&in.HotLoopLimit, "hot-loop-limit", 3, "patches of the same image before a reverting actor is reported")
		f.BoolVar(&in.AwaitMCO, "await-mco", false, "wait for the MCO to reconcile the MachineSets it manages, and fail those it does not")
		sf.bind(cmd)
		return cmd
	})
}
