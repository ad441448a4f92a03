package main

import (
	"github.com/spf13/cobra"

	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func init() {
	commands = append(commands, func(a *app) *cobra.Command {
		var (
			sf     startFlags
			in     mgsupdate.HostFlashInput
			sp     spFlags
			p1, p2 artifactFlags
		)
		cmd := &cobra.Command{
			Use:   "host-flash --sled N --serial S --phase1 FILE --phase1-version V --phase2 FILE --phase2-version V",
			Short: "Update a sled's host boot flash (phase 1) and boot it with its phase 2 image",
			Long: `Verifies both images, prechecks the sled (identity; the active slot's hash
already being phase 1 means nothing to do; never roll back), writes phase 1
to the inactive host-boot-flash slot through MGS (attempts, ledger and
concurrent updates as for sp-firmware), makes phase 2 available on every MGS,
sets the new slot active with persist and power-cycles the host. The host's
phase 2 fetch is followed through the SP's record of its last fetched offset,
asked through any MGS (the SP may fetch through either). Done when the host
booted the new slot with the new phase 2; otherwise HostBootTimeout after
--new-version-timeout.`,
			Example: `  starter host-flash --sled 12 --serial BRM42000012 --phase1 /srv/os/phase1.img --phase1-version 2.0.0 \
      --phase2 /srv/os/phase2.img --phase2-version 2.0.0 --wait`,
			Args: exactArgs(0),
			RunE: func(cmd *cobra.Command, _ []string) error {
				var err error
				if in.Sled, err = sp.target(); err != nil {
					return err
				}
				if in.Phase1, err = p1.artifact("--phase1"); err != nil {
					return err
				}
				if in.Phase2, err = p2.artifact("--phase2"); err != nil {
					return err
				}
				if err := in.Validate(); err != nil {
					return usageErr("%v", err)
				}
				return a.startUpdate(cmd, update{Kind: workflows.KindHostFlash, Target: in.Target(), Artifact: in.Phase1.Version,
					Workflow: mgsupdate.HostBootFlashUpdate, Input: in}, sf)
			},
		}
		f := cmd.Flags()
		sp.bind(f, false)
		p1.bind(f, "phase1", "the host phase 1 image")
		p2.bind(f, "phase2", "the host phase 2 image")
		f.StringVar(&in.ExpectedActive, "expected-active", "", "fail unless the active slot's phase 1 hash (SHA-256, hex) is this")
		f.StringVar(&in.ExpectedInactive, "expected-inactive", "", "fail unless the inactive slot's phase 1 hash (SHA-256, hex) is this")
		bindMGSTiming(f, &in.Timing)
		sf.bind(cmd)
		return cmd
	})
}
