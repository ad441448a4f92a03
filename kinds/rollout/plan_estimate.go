package rollout

import (
	"time"
)

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
