package main

import (
	"github.com/spf13/pflag"

	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
)

// hostPairFlags are what host-flash and host-recovery both take: a sled's
// SP (no switch or power shelf: only sleds have a host) and one release's
// phase 1 and phase 2 images.
type hostPairFlags struct {
	sp     spFlags
	p1, p2 artifactFlags
}

// bind adds --sled, --serial, --part and the --phase1… and --phase2…
// flags; phase1 and phase2 say what each image is in the help.
func (h *hostPairFlags) bind(f *pflag.FlagSet, phase1, phase2 string) {
	h.sp.bind(f, false)
	h.p1.bind(f, "phase1", phase1)
	h.p2.bind(f, "phase2", phase2)
}

// parse gives the sled and the two images, or the usage error of the
// first that is wrong, in that order (the SP, phase 1, phase 2).
func (h *hostPairFlags) parse() (sled mgsupdate.SPTarget, phase1, phase2 mgsupdate.Artifact, err error) {
	if sled, err = h.sp.target(); err != nil {
		return sled, phase1, phase2, err
	}
	if phase1, err = h.p1.artifact("--phase1"); err != nil {
		return sled, phase1, phase2, err
	}
	phase2, err = h.p2.artifact("--phase2")
	return sled, phase1, phase2, err
}
