package bench

import (
	"fmt"
	"time"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// benchTimings are the device timings every run uses, fixed here (not
// taken from spec.DefaultTimings, so a change there does not silently move
// the bench): the real devices' orders of magnitude, divided by the
// configured speed-up at run time.
func benchTimings() spec.Timings {
	return spec.Timings{
		FlashBytesPerSecond:  256 << 10,
		SPResetTime:          spec.Duration{Duration: 20 * time.Second},
		HostBootTime:         spec.Duration{Duration: 3 * time.Minute},
		Phase2BytesPerSecond: 167 << 10,
		ZoneRemovalTime:      spec.Duration{Duration: 5 * time.Second},
		AgentInstallTime:     spec.Duration{Duration: 45 * time.Second},
		MachineBootTime:      spec.Duration{Duration: 4 * time.Minute},
		NexusClaimInterval:   spec.Duration{Duration: 2 * time.Second},
		SagaRunTime:          spec.Duration{Duration: 30 * time.Second},
	}
}

// SupportedKinds are the kinds the bench can drive.
var SupportedKinds = []workflows.Kind{workflows.KindSPFirmware, workflows.KindAgentInstall}

func newDriver(k workflows.Kind, cfg *Config) (driver, error) {
	if _, ok := kinds.Kinds[k]; !ok {
		return nil, fmt.Errorf("kind %s is not registered in kinds.Kinds (not landed yet?)", k)
	}
	switch k {
	case workflows.KindSPFirmware:
		return &spDriver{cfg: cfg}, nil
	case workflows.KindAgentInstall:
		return agentDriver{cfg: cfg}, nil
	}
	return nil, fmt.Errorf("the bench has no driver for kind %s (supported: %v)", k, SupportedKinds)
}
