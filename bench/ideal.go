package bench

import (
	"fmt"
	"math"
	"time"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// Constants of fleetsim/mgs's SP model that the spec does not carry. They
// mirror fleetsim/mgs/sp.go (spPrepareTime, deliveryTick); if fleetsim
// changes them, the ideal changes with them (the truth check in each run
// compares the model with fleetsim's own record of each device's busy time).
const (
	simSPPrepareTime = 2 * time.Second       // erase of the inactive SP bank (scaled)
	simDeliveryTick  = 20 * time.Millisecond // MGS delivery loop tick (not scaled)
)

// spDeviceTime is the time one SP firmware update keeps its device busy,
// computed as fleetsim applies the timings:
//
//   - prepare: the delivery loop ticks every 20 ms; the first tick at or
//     after Scale(2 s) moves the update to in_progress and delivers a chunk;
//   - delivery: one chunk of FlashBytesPerSecond×SpeedUp×20 ms bytes per tick,
//     so the image is complete at tick k0 + ceil(size/chunk) − 1;
//   - reset: the SP is down for Scale(SPResetTime); the reset call returns
//     when it is back, running the new image.
//
// Everything else (prechecks, caboose reads, status polls) is free on the
// device's side.
func spDeviceTime(s *spec.Spec, imageSize int64) (time.Duration, string) {
	prep := s.Scale(simSPPrepareTime)
	k0 := max(int64(1), int64(math.Ceil(float64(prep)/float64(simDeliveryTick))))
	rate := float64(s.Timings.FlashBytesPerSecond) * s.SpeedUp
	if rate <= 0 {
		rate = 1 << 30
	}
	chunk := max(int64(1), int64(rate*simDeliveryTick.Seconds()))
	chunks := (imageSize + chunk - 1) / chunk
	delivery := time.Duration(k0+chunks-1) * simDeliveryTick
	reset := s.Scale(s.Timings.SPResetTime.Duration)
	return delivery + reset, fmt.Sprintf("prepare+delivery %d ticks × 20 ms = %s (image %d B in %d chunks of %d B) + reset %s",
		k0+chunks-1, delivery, imageSize, chunks, chunk, reset)
}

// agentDeviceTime is one agent_install task on a generated server (no
// slowness): Scale(AgentInstallTime).
func agentDeviceTime(s *spec.Spec) (time.Duration, string) {
	d := s.Scale(s.Timings.AgentInstallTime.Duration)
	return d, fmt.Sprintf("agent_install task %s", d)
}

// idealMakespan is the physical limit of n device updates of d each at
// concurrency p: ceil(n/p) waves of d.
func idealMakespan(n, p int, d time.Duration) time.Duration {
	if p < 1 {
		p = 1
	}
	waves := (n + p - 1) / p
	return time.Duration(waves) * d
}
