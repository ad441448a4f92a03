package workflows

import "time"

// deviceTime is how long one device's change takes, for a dry run's
// estimate. Measured at real device speed where a measurement exists
// (bench/results/speedup1: 26 s per SP, 45 s per server's agent install);
// the others are the order of the device's own work: a host boots and
// fetches its phase 2 image (minutes), a zone expunge is a config PUT and
// an inventory proof, a MachineSet patch settles before it is rechecked.
var deviceTime = map[Kind]time.Duration{
	KindSPFirmware:    26 * time.Second,
	KindHostFlash:     10 * time.Minute,
	KindAgentInstall:  45 * time.Second,
	KindAgentDrift:    45 * time.Second,
	KindBootImageBump: 30 * time.Second,
	KindZoneExpunge:   time.Minute,
}

// stageEstimate is a stage's duration from its updates' durations: the
// work spread over the stage's concurrency, but never less than its
// longest update, nor than one exclusive group's updates run one by one.
func stageEstimate(st Stage, durations map[string]time.Duration) time.Duration {
	var total, longest time.Duration
	for _, u := range st.Updates {
		d := durations[u.Target]
		total += d
		longest = max(longest, d)
	}
	est := max(total/time.Duration(max(st.Concurrency, 1)), longest)
	for _, g := range st.Exclusive {
		var serial time.Duration
		for _, t := range g {
			serial += durations[t]
		}
		est = max(est, serial)
	}
	return est
}
