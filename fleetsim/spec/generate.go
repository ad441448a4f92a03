package spec

import "errors"

// GenerateOptions size a generated fleet.
type GenerateOptions struct {
	Sleds       int
	Servers     int
	MachineSets int
	Seed        int64
	SpeedUp     float64
}

// Generate builds a valid fleet of the requested size, deterministic in Seed.
// Each section's generator lives beside its section (generate_*.go).
func Generate(o GenerateOptions) (*Spec, error) {
	if o.Sleds < 0 || o.Servers < 0 || o.MachineSets < 0 {
		return nil, errors.New("sizes must be >= 0")
	}
	if o.SpeedUp <= 0 {
		o.SpeedUp = 1
	}
	s := &Spec{Seed: o.Seed, SpeedUp: o.SpeedUp, Timings: DefaultTimings()}
	s.Racks = GenerateRacks(o.Sleds, o.Seed)
	s.Datacenter = GenerateDatacenter(o.Servers, o.Seed)
	s.Clusters = GenerateClusters(o.MachineSets, o.Seed)
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}
