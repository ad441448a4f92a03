package main

import (
	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func init() {
	commands = append(commands, func(a *app) *cobra.Command {
		var (
			sledID string
			sf     startFlags
			in     mgsupdate.HostFlashInput
			pair   hostPairFlags
		)
		cmd := &cobra.Command{
			Use:   "host-flash --sled N --serial S --phase1 FILE --phase1-version V --phase2 FILE --phase2-version V",
			Short: "Update a sled's host OS: phase 2 to its disk through sled-agent, phase 1 through MGS",
			Long: `The rack's host OS update. Verifies both images, prechecks the sled (identity;
the active slot's hash already being phase 1, with sled-agent running from
that slot's disk, means nothing to do; never roll back), then has the
sled's sled-agent (found by the serial in Nexus's sled table) write phase 2
to the disk of the inactive slot: the artifact store's config lists it, the
file is uploaded, the sled config names it for that disk (through a child
of Nexus's target blueprint when its executor owns the config). Once the
disk holds it, writes phase 1 to the inactive host-boot-flash slot through
MGS (attempts, ledger and concurrent updates as for sp-firmware), makes the
slot active with persist and resets the SP, which restarts the host. Done
when sled-agent reports the new boot disk; a host not back on it within
--new-version-timeout is put back on its old slot (HostBootTimeout).
--sled-id names the sled where the workers have no Nexus sled table.`,
			Example: `  starter host-flash --sled 12 --serial BRM42000012 --phase1 /srv/os/phase1.img --phase1-version 2.0.0 \
      --phase2 /srv/os/phase2.img --phase2-version 2.0.0 --wait`,
			Args: exactArgs(0),
			RunE: func(cmd *cobra.Command, _ []string) error {
				var err error
				if in.Sled, in.Phase1, in.Phase2, err = pair.parse(); err != nil {
					return err
				}
				if sledID != "" {
					if in.SledID, err = uuid.Parse(sledID); err != nil {
						return usageErr("--sled-id %q is not a UUID", sledID)
					}
				}
				if err := in.Validate(); err != nil {
					return usageErr("%v", err)
				}
				return a.startUpdate(cmd, update{Kind: workflows.KindHostFlash, Target: in.Target(), Artifact: in.Phase1.Version,
					Workflow: mgsupdate.HostBootFlashUpdate, Input: in}, sf)
			},
		}
		f := cmd.Flags()
		pair.bind(f, "the host phase 1 image", "the host phase 2 image")
		f.StringVar(&sledID, "sled-id", "", "the sled's UUID (only where the workers have no Nexus sled table to find it by serial)")
		f.StringVar(&in.ExpectedActive, "expected-active", "", "fail unless the active slot's phase 1 hash (SHA-256, hex) is this")
		f.StringVar(&in.ExpectedInactive, "expected-inactive", "", "fail unless the inactive slot's phase 1 hash (SHA-256, hex) is this")
		bindMGSTiming(f, &in.Timing)
		sf.bind(cmd)
		return cmd
	})
}
