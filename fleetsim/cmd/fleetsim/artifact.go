package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/fleetsaga/fleetsaga/fleetsim/mgs"
)

// newArtifact writes a simulated firmware image and prints its SHA-256.
// SP and phase 1 images carry the header fleetsim's SPs read, then
// deterministic filler; phase 2 images are in the real format (the 4 KiB
// header block MGS and sled-agent check), and their line also names the
// image's ID at MGS: the header's SHA-256, which a phase 1 image names.
func newArtifact() *cobra.Command {
	var (
		h        mgs.ImageHeader
		size     int
		out      string
		p2Image  string
		p2IDFlag string
	)
	cmd := &cobra.Command{
		Use:   "artifact --component sp --version 1.1.0 --out FILE",
		Short: "Write a simulated firmware image and print its SHA-256",
		Example: `  fleetsim artifact --component sp --version 1.1.0 --out sp-1.1.0.img
  fleetsim artifact --component sp --version 1.1.0 --board sidecar-b --out sidecar.img
  fleetsim artifact --component host-phase2 --version 2.0.0 --out phase2.img
  fleetsim artifact --component host-boot-flash --version 2.0.0 --phase2-image phase2.img --out phase1.img`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if h.Component == "" || h.Version == "" || out == "" {
				return usageError{errors.New("--component, --version and --out are required")}
			}
			if size < 1 {
				return usageError{errors.New("--size must be > 0")}
			}
			if h.Component == "host-phase2" {
				img := mgs.MakePhase2Image(h.Version, size)
				if err := os.WriteFile(out, img, 0o644); err != nil {
					return err
				}
				// sha256 of the file, the path, then the ID at MGS.
				fmt.Printf("%s  %s  phase2-id=%s\n", mgs.SHA256Hex(img), out, mgs.Phase2ID(img))
				return nil
			}
			switch {
			case p2Image != "" && p2IDFlag != "":
				return usageError{errors.New("--phase2 and --phase2-image are exclusive")}
			case p2Image != "":
				id, err := mgs.ReadPhase2ID(p2Image)
				if err != nil {
					return usageError{fmt.Errorf("--phase2-image: not a host phase 2 image: %w", err)}
				}
				h.Phase2 = id
			case p2IDFlag != "":
				h.Phase2 = p2IDFlag
			}
			sum, err := mgs.WriteImageFile(out, h, size)
			if err != nil {
				return err
			}
			fmt.Printf("%s  %s\n", sum, out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&h.Component, "component", "", "sp, host-boot-flash (phase 1) or host-phase2")
	f.StringVar(&h.Version, "version", "", "version the image carries")
	f.StringVar(&h.Board, "board", "", "for sp: the caboose BORD (default gimlet-e, the simulated SPs' board)")
	f.StringVar(&p2Image, "phase2-image", "", "for host-boot-flash: the phase 2 image file it boots (its header's SHA-256 is named)")
	f.StringVar(&p2IDFlag, "phase2", "", "for host-boot-flash: the ID of the phase 2 image it boots (its header's SHA-256)")
	f.IntVar(&size, "size", 256<<10, "image size in bytes")
	f.StringVar(&out, "out", "", "file to write")
	return cmd
}
