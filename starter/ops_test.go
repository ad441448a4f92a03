package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/ledger"
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

// status used to list a rerun's attempts and this run's together,
// each "attempt 1", and print "failed failed".
func TestStatusGroupsAttemptsByRunAndSaysEachEndingOnce(t *testing.T) {
	at := func(run string, n int, state ledger.State, outcome, errMsg string) attemptView {
		return attemptView{Attempt: ledger.Attempt{RunID: run, Attempt: n, State: state, Outcome: outcome, Error: errMsg}}
	}
	var b strings.Builder
	printAttempts(&b, "r2", []attemptView{
		at("r1", 1, ledger.StateFailed, "failed", "WrongDevice: serial mismatch"),
		at("r2", 1, ledger.StateFailed, "attempt failed", "update lost"),
		at("r2", 2, ledger.StateCompleted, "CompletedUpdate", ""),
	})
	got := b.String()
	require.Equal(t, `  run r2 (this run):
    attempt 1 00000000-0000-0000-0000-000000000000: failed: update lost
    attempt 2 00000000-0000-0000-0000-000000000000: completed CompletedUpdate
  run r1 (an earlier run):
    attempt 1 00000000-0000-0000-0000-000000000000: failed: WrongDevice: serial mismatch
`, got)
}

// `list --state runing` listed nothing, silently, while a --kind
// typo exited 2.
func TestListRefusesAnUnknownState(t *testing.T) {
	require.NoError(t, checkListState("paused", false))
	require.NoError(t, checkListState("pending", true))
	err := checkListState("runing", false)
	require.EqualError(t, err, `unknown --state "runing" (one of running, paused, completed, failed, cancelled)`)
	var exit *exitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, exitUsage, exit.code)
	require.Error(t, checkListState("paused", true), "the ledger has no paused attempts")
}
