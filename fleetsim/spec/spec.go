// Package spec is the fleet specification fleetsim is seeded from: what the
// simulated rack, datacenter and clusters contain, how fast devices are, and
// which faults are armed from the start.
package spec

import (
	"errors"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
)

// Spec is the whole simulated fleet. Each section is owned by the simulator
// package that serves it (rack: MGS/SP + sled-agents + Nexus; datacenter:
// CNAPI/SAPI/IMGAPI; clusters: the Kubernetes-style machine API).
type Spec struct {
	// Seed makes error rates and random choices reproducible.
	Seed int64 `json:"seed"`
	// SpeedUp divides every device timing (1 = real time).
	SpeedUp float64 `json:"speedUp"`
	Timings Timings `json:"timings"`

	Racks      []Rack         `json:"racks"`
	Datacenter Datacenter     `json:"datacenter"`
	Clusters   []Cluster      `json:"clusters"`
	Faults     []faults.Fault `json:"faults"`
}

// Timings are real-world device durations; fleetsim divides them by SpeedUp.
type Timings struct {
	// FlashBytesPerSecond is the SP/host flash write rate seen by MGS delivery.
	FlashBytesPerSecond int64    `json:"flashBytesPerSecond"`
	SPResetTime         Duration `json:"spResetTime"`
	HostBootTime        Duration `json:"hostBootTime"`
	// Phase2BytesPerSecond is the host's recovery fetch rate through the SP.
	Phase2BytesPerSecond int64 `json:"phase2BytesPerSecond"`
	// ArtifactStoreBytesPerSecond is how fast a sled-agent's artifact
	// store takes a PUT /artifacts body (writing it to both M.2
	// datasets); 0 takes it as fast as it is sent.
	ArtifactStoreBytesPerSecond int64    `json:"artifactStoreBytesPerSecond,omitempty"`
	ZoneRemovalTime             Duration `json:"zoneRemovalTime"`
	AgentInstallTime            Duration `json:"agentInstallTime"`
	MachineBootTime             Duration `json:"machineBootTime"`
	// NexusClaimInterval is how often a running Nexus claims new sagas.
	NexusClaimInterval Duration `json:"nexusClaimInterval"`
	// SagaRunTime is how long a claimed saga runs before it finishes.
	SagaRunTime Duration `json:"sagaRunTime"`
	// BlueprintExecutorInterval is how often Nexus's blueprint executor
	// pushes the target's sled configs (Nexus: every 60 s).
	BlueprintExecutorInterval Duration `json:"blueprintExecutorInterval"`
}

// Duration is a time.Duration written as "1.5s" in YAML.
type Duration struct{ time.Duration }

func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' {
		return fmt.Errorf("duration must be a string like \"1.5s\", got %s", b)
	}
	v, err := time.ParseDuration(string(b[1 : len(b)-1]))
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("duration %s is negative", v)
	}
	d.Duration = v
	return nil
}

// DefaultTimings are the real devices' orders of magnitude (docs/CONFORMANCE.md).
func DefaultTimings() Timings {
	return Timings{
		FlashBytesPerSecond:       256 << 10,
		SPResetTime:               Duration{20 * time.Second},
		HostBootTime:              Duration{3 * time.Minute},
		Phase2BytesPerSecond:      167 << 10,
		ZoneRemovalTime:           Duration{5 * time.Second},
		AgentInstallTime:          Duration{45 * time.Second},
		MachineBootTime:           Duration{4 * time.Minute},
		NexusClaimInterval:        Duration{2 * time.Second},
		SagaRunTime:               Duration{30 * time.Second},
		BlueprintExecutorInterval: Duration{60 * time.Second},
	}
}

// Load reads and validates a YAML spec. Unknown fields are errors so a typo
// in a spec does not silently produce a different fleet.
func Load(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read fleet spec: %w", err)
	}
	return Parse(b)
}

// Parse decodes and validates a YAML or JSON spec.
func Parse(b []byte) (*Spec, error) {
	s := &Spec{SpeedUp: 1, Timings: DefaultTimings()}
	if err := yaml.UnmarshalStrict(b, s); err != nil {
		return nil, fmt.Errorf("parse fleet spec: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("invalid fleet spec: %w", err)
	}
	return s, nil
}

// Validate checks every section.
func (s *Spec) Validate() error {
	if s.SpeedUp <= 0 {
		return errors.New("speedUp must be > 0")
	}
	var errs []error
	errs = append(errs, validateRacks(s.Racks))
	errs = append(errs, s.Datacenter.validate())
	errs = append(errs, validateClusters(s.Clusters))
	for i, f := range s.Faults {
		if err := f.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("faults[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// Scale turns a real-world duration into simulated wall time.
func (s *Spec) Scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) / s.SpeedUp)
}
