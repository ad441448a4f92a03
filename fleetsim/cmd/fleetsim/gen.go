package main

import (
	"os"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

func newGen() *cobra.Command {
	var o spec.GenerateOptions
	cmd := &cobra.Command{
		Use:     "gen",
		Short:   "Print a generated fleet spec of the given size",
		Example: "  fleetsim gen --sleds 1000 --servers 1000 --machinesets 50 --speed-up 100 > big.yaml",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := spec.Generate(o)
			if err != nil {
				return usageError{err}
			}
			b, err := yaml.Marshal(s)
			if err != nil {
				return err
			}
			_, err = os.Stdout.Write(b)
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Sleds, "sleds", 8, "sleds in the rack")
	f.IntVar(&o.Servers, "servers", 10, "datacenter servers")
	f.IntVar(&o.MachineSets, "machinesets", 4, "MachineSets in the cluster")
	f.Int64Var(&o.Seed, "seed", 1, "seed for UUIDs and faults")
	f.Float64Var(&o.SpeedUp, "speed-up", 1, "device timing speed-up")
	return cmd
}
