package e2e

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
)

// --dry-run through the real binaries: the exit code says what the plan
// would do (6 changes, 7 refusals, 0 nothing), --json gives the rows, and
// the SP is not touched until the update itself runs.
func TestStarterDryRunExitCodesAndRows(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	s, err := spec.Generate(spec.GenerateOptions{Sleds: 4, Servers: 4, Seed: 5, SpeedUp: 30})
	require.NoError(t, err)
	stack := startStack(t, s, 1, 0)
	op := operator{t, stack}
	sled := s.Racks[0].Sleds[2]
	args := []string{"sp-firmware", "--sled", "2", "--serial", sled.Serial, "--artifact", spImage(t, "1.1.0"), "--version", "1.1.0"}

	plan := func(want int, args ...string) rollout.PlanResult {
		t.Helper()
		r := op.run(append(args, "--dry-run", "--json")...)
		require.Equal(t, want, r.code, "%v: %s", args, r.stderr)
		var res rollout.PlanResult
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.stdout)
		require.Len(t, res.Rows(), 1)
		return res
	}
	row := plan(6, args...).Rows()[0]
	require.Equal(t, "update", string(row.Action))
	require.Equal(t, spec.GeneratedSPActive+" → 1.1.0", row.Current+" → "+row.Desired)
	row = plan(6, args...).Rows()[0]
	require.Equal(t, spec.GeneratedSPActive, row.Current, "the first dry run changed nothing")

	wrong := append([]string{}, args...)
	wrong[4] = "BRM-NOT-THIS-ONE"
	row = plan(7, wrong...).Rows()[0]
	require.Equal(t, "refuse", string(row.Action))
	require.Contains(t, row.Reason, failure.WrongDevice)

	r := op.run(append(args, "--wait")...)
	require.Equal(t, 0, r.code, r.stderr)
	row = plan(0, args...).Rows()[0]
	require.Equal(t, "already-at-target", string(row.Action))

	text := op.run(append(args, "--dry-run")...)
	require.Equal(t, 0, text.code, text.stderr)
	require.Contains(t, text.stdout, "ORDER  TARGET     DEVICE  CURRENT  DESIRED  ACTION")
}
