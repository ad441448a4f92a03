package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
)

// A failed rollout once said only "stage sp-firmware: 1 failed,
// budget 0 (FailureBudgetExceeded)"; which update failed and why took a
// `list` and a `status` of the child. watch, status and --json now name it.
func TestFailedRolloutNamesItsFailedUpdateAndWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	s, err := spec.Generate(spec.GenerateOptions{Sleds: 4, Servers: 1, Seed: 5, SpeedUp: 30})
	require.NoError(t, err)
	stack := startStackOn(t, devstack.TemporalDev, s, 1, 0)
	op := operator{t, stack}
	img := spImage(t, "1.1.0")
	path := writePlan(t, "e2e-failing", "- name: firmware\n  kind: sp-firmware\n  concurrency: 1\n  failureBudget: 0\n  updates:\n"+
		spPlanUpdate(t, img, 1, "BRM-NOT-THIS-ONE"))
	id := "fleetsaga/rollout/plan/e2e-failing"

	require.Equal(t, 0, op.run("rollout", path).code)
	w := op.run("watch", id)
	require.Equal(t, 1, w.code, "watch of a failed rollout: %s", w.stderr)
	t.Logf("watch printed:\n%s%s", w.stdout, w.stderr)
	require.Contains(t, w.stdout, "failed updates:")
	require.Regexp(t, `sp-firmware +sp/sled/1 +failed +WrongDevice +\S`, w.stdout)

	st := op.run("status", id)
	require.Equal(t, 0, st.code, st.stderr)
	require.Regexp(t, `sp-firmware +sp/sled/1 +failed +WrongDevice +\S`, st.stdout)

	var v struct {
		FailedUpdates []failedUpdateJSON `json:"failedUpdates"`
	}
	op.json(&v, "status", id)
	require.Len(t, v.FailedUpdates, 1)
	require.Equal(t, "sp/sled/1", v.FailedUpdates[0].Target)
	require.Equal(t, "WrongDevice", v.FailedUpdates[0].Outcome)
	require.Contains(t, v.FailedUpdates[0].Reason, "BRM-NOT-THIS-ONE", "the reason says what was wrong")
	require.NotContains(t, v.FailedUpdates[0].Reason, "\n")
	require.False(t, v.FailedUpdates[0].RerunMayHelp, "a wrong device needs a change first")

	// The same failure reads the same wherever it is printed: its type and
	// reason once, and whether a rerun may help; never the SDK's
	// "(type: …, retryable: …)" framing, which said retryable: true in one
	// place and false in another.
	child := op.run("status", "fleetsaga/sp-firmware/sp/sled/1")
	require.Equal(t, 0, child.code, child.stderr)
	require.Regexp(t, `failed: WrongDevice: .*BRM-NOT-THIS-ONE.* \(a rerun will not help: change something first\)`, child.stdout)
	require.Regexp(t, `WrongDevice +.*BRM-NOT-THIS-ONE.* \(a rerun will not help: change something first\)`, w.stdout)
	require.Contains(t, w.stderr, "failed: FailureBudgetExceeded: ")
	for _, out := range []string{w.stdout, w.stderr, st.stdout, child.stdout} {
		require.NotContains(t, out, "retryable:")
		require.NotContains(t, out, "(type:")
	}
}

type failedUpdateJSON struct {
	Target  string `json:"target"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
	// RerunMayHelp: whether the same update run again may end otherwise.
	RerunMayHelp bool `json:"rerunMayHelp"`
}
