package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/fleetsaga/fleetsaga/fleetsim/mgs"
)

// newArtifact writes a simulated firmware image (the header fleetsim's SPs
// read, then deterministic filler) and prints its SHA-256.
func newArtifact() *cobra.Command {
	var (
		h    mgs.ImageHeader
		size int
		out  string
	)
	cmd := &cobra.Command{
		Use:   "artifact --component sp --version 1.1.0 --out FILE",
		Short: "Write a simulated firmware image and print its SHA-256",
		Example: `  fleetsim artifact --component sp --version 1.1.0 --out sp-1.1.0.img
  fleetsim artifact --component host-phase2 --version 2.0.0 --out phase2.img
  fleetsim artifact --component host-boot-flash --version 2.0.0 --phase2 <sha256 of phase2.img> --out phase1.img`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if h.Component == "" || h.Version == "" || out == "" {
				return usageError{errors.New("--component, --version and --out are required")}
			}
			if size < 1 {
				return usageError{errors.New("--size must be > 0")}
			}
			var sum string
			var err error
			if h.Component == "host-phase2" {
				img := mgs.MakePhase2Image(h.Version, size)
				sum, err = mgs.SHA256Hex(img), os.WriteFile(out, img, 0o644)
			} else {
				sum, err = mgs.WriteImageFile(out, h, size)
			}
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
	f.StringVar(&h.Phase2, "phase2", "", "for host-boot-flash: SHA-256 of the phase 2 image it boots")
	f.IntVar(&size, "size", 256<<10, "image size in bytes")
	f.StringVar(&out, "out", "", "file to write")
	return cmd
}
