package main

import (
	"os"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

func newGen() *cobra.Command {
	var o spec.GenerateOptions
	owners := true
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
			if !owners {
				for i := range s.Racks {
					s.Racks[i].Owners = spec.NoOwners()
				}
				for i := range s.Clusters {
					s.Clusters[i].MCO = spec.Off()
				}
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
	f.BoolVar(&owners, "owners", true, "play the rack's and clusters' other owners (Nexus's lockstep API, executor and MGS driver; the MCO), as today's rack and cluster have them; --owners=false writes them off")
	return cmd
}
