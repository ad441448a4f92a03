package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// pause and resume of a kind that does not listen for them would be
// accepted by Temporal and silently ignored: the starter refuses them (exit
// 2) before contacting anything. Rollouts and agent-install fan-outs get as
// far as dialing Temporal.
func TestPauseResumeRefusedForKindsThatIgnoreThem(t *testing.T) {
	unreachable := []string{"TEMPORAL_ADDRESS=127.0.0.1:1"}
	for _, id := range []string{
		"fleetsaga/sp-firmware/sp/sled/3",
		"fleetsaga/host-flash/sp/sled/3",
		"fleetsaga/zone-expunge/zone/3f6d1c2e-0000-4000-8000-000000000001",
		"fleetsaga/bootimage-bump/cluster/prod-east",
		"fleetsaga/agent-drift/dc/drift/all",
		"fleetsaga/agent-install/dc/vm-agent/5f1c0000-0000-4000-8000-000000000001/6a2d0000-0000-4000-8000-000000000002",
	} {
		for _, verb := range []string{"pause", "resume"} {
			r := runStarter(t, unreachable, verb, id)
			require.Equal(t, exitUsage, r.code, "%s %s: %s", verb, id, r.stderr)
			require.Contains(t, r.stderr, "does not support pause/resume")
			require.NotContains(t, r.stdout, "sent")
		}
	}
	for _, id := range []string{"fleetsaga/rollout/plan/q3", "fleetsaga/agent-install/dc/vm-agent"} {
		r := runStarter(t, unreachable, "pause", id)
		require.Equal(t, exitUnreachable, r.code, "%s: %s", id, r.stderr)
	}
}
