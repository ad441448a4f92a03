package main

import (
	"github.com/spf13/cobra"

	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func init() {
	commands = append(commands, func(a *app) *cobra.Command {
		var (
			sf   startFlags
			in   mgsupdate.HostRecoveryInput
			pair hostPairFlags
		)
		cmd := &cobra.Command{
			Use:   "host-recovery --sled N --serial S --phase1 FILE --phase1-version V --phase2 FILE --phase2-version V",
			Short: "Boot a sled's host on the trampoline over the recovery path (mupdate): phase 2 through the SP",
			Long: `The recovery (mupdate) path, for a host that cannot be updated the normal way
(host-flash). Verifies the trampoline's images (a phase 1 naming its phase 2),
prechecks the sled's identity, writes the trampoline phase 1 to the inactive
host-boot-flash slot through MGS (attempts, ledger and concurrent updates as
for sp-firmware), uploads phase 2 to every reachable MGS, makes the slot
active for ONE boot (not persisted), sets phase2_recovery_mode in the SP's
startup options and power-cycles the host. The host fetches phase 2 through
its SP from whichever MGS answers; every MGS is asked, and the update's
progress (status, watch, the Web UI) moves at each tenth of the fetch. Done
when the host booted the trampoline (recovery mode is then cleared); from
there the operator installs the real OS. A fetch not done within
--new-version-timeout fails (HostBootTimeout). On failure or cancel,
recovery mode is cleared and the next boot is put back on the installed
slot: the persistent slot is never changed, so a power cycle boots the
installed OS.`,
			Example: `  starter host-recovery --sled 12 --serial BRM42000012 --phase1 /srv/recovery/trampoline-phase1.img \
      --phase1-version 2.0.0 --phase2 /srv/recovery/trampoline-phase2.img --phase2-version 2.0.0 --wait`,
			Args: exactArgs(0),
			RunE: func(cmd *cobra.Command, _ []string) error {
				var err error
				if in.Sled, in.Phase1, in.Phase2, err = pair.parse(); err != nil {
					return err
				}
				if err := in.Validate(); err != nil {
					return usageErr("%v", err)
				}
				return a.startUpdate(cmd, update{Kind: workflows.KindHostRecovery, Target: in.Target(), Artifact: in.Phase1.Version,
					Workflow: mgsupdate.HostRecovery, Input: in}, sf)
			},
		}
		f := cmd.Flags()
		pair.bind(f, "the trampoline's phase 1 image", "the trampoline's phase 2 image")
		bindMGSTiming(f, &in.Timing)
		sf.bind(cmd)
		return cmd
	})
}
