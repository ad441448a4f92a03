package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
)

// Two rollouts with different names over the same targets once both
// started and both failed. The second, and a single update of a target the
// running rollout holds in a later stage, are refused before anything
// starts (exit 2, one line), and nothing of theirs runs.
func TestSecondRolloutOverTheSameTargetsIsRefusedBeforeItStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	s, err := spec.Generate(spec.GenerateOptions{Sleds: 4, Servers: 1, Seed: 6, SpeedUp: 30})
	require.NoError(t, err)
	stack := startStackOn(t, devstack.TemporalDev, s, 1, 0)
	op := operator{t, stack}
	img := spImage(t, "1.1.0")
	update := func(slot int) string { return spPlanUpdate(t, img, slot, s.Racks[0].Sleds[slot].Serial) }
	// The first rollout's stage 1 never finishes (a stuck SP): sled 2, in
	// its stage 2, is held but not started.
	op.arm(faults.Fault{Kind: faults.SPStuck, Target: "sp/sled/1", AfterPercent: 30})
	first := writePlan(t, "first", "- name: one\n  kind: sp-firmware\n  concurrency: 1\n  updates:\n"+update(1)+
		"- name: two\n  kind: sp-firmware\n  concurrency: 1\n  updates:\n"+update(2))
	require.Equal(t, 0, op.run("rollout", first).code)

	second := op.run("rollout", writePlan(t, "second", "- name: s\n  kind: sp-firmware\n  concurrency: 1\n  updates:\n"+update(2)+update(3)))
	require.Equal(t, 2, second.code, "a second rollout over a held target: %s", second.stderr)
	require.Equal(t, 1, strings.Count(second.stderr, "starter: "), "one error line: %s", second.stderr)
	require.Contains(t, second.stderr, "target sp/sled/2 is held by the running rollout fleetsaga/rollout/plan/first")
	require.Equal(t, 2, op.run("status", "fleetsaga/rollout/plan/second").code, "the second rollout was never started")

	single := op.run("sp-firmware", "--sled", "2", "--serial", s.Racks[0].Sleds[2].Serial, "--artifact", img, "--version", "1.1.0")
	require.Equal(t, 2, single.code, "a single update of a held target: %s", single.stderr)
	require.Contains(t, single.stderr, "held by the running rollout fleetsaga/rollout/plan/first")

	require.Equal(t, 0, op.run("cancel", "fleetsaga/rollout/plan/first").code)
}
