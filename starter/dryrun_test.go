package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// A dry run validates like a start: bad input exits 2 before anything is
// contacted; valid input gets as far as dialing Temporal.
func TestDryRunValidatesBeforeContactingAnything(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	img := filepath.Join(t.TempDir(), "img.bin")
	require.NoError(t, os.WriteFile(img, []byte("image"), 0o644))
	assert.Equal(t, exitUsage, run([]string{"sp-firmware", "--sled", "1", "--artifact", img, "--version", "1", "--dry-run"}), "no serial")
	assert.Equal(t, exitUsage, run([]string{"rollout", "/does/not/exist.yaml", "--dry-run"}))
	assert.Equal(t, exitUnreachable, run([]string{"sp-firmware", "--sled", "1", "--serial", "S", "--artifact", img, "--version", "1", "--dry-run"}))
}

// The exit code says what the plan would do: refusals first, then changes.
func TestPlanExitCodes(t *testing.T) {
	code := func(res rollout.PlanResult) int {
		err := planExit(res)
		if err == nil {
			return exitOK
		}
		return err.(*exitError).code
	}
	assert.Equal(t, exitOK, code(rollout.PlanResult{}))
	assert.Equal(t, exitPlanChanges, code(rollout.PlanResult{Changes: 3}))
	assert.Equal(t, exitPlanRefused, code(rollout.PlanResult{Changes: 3, Refused: 1}))
}

// One update's dry run is a one-stage plan holding it; a rollout's is its
// own plan.
func TestDryRunPlanOfOneUpdate(t *testing.T) {
	in := zoneexpunge.ZoneExpungeInput{}
	p, err := dryRunPlan(update{Kind: workflows.KindZoneExpunge, Target: "zone/z", Input: in})
	require.NoError(t, err)
	require.Len(t, p.Stages, 1)
	assert.Equal(t, workflows.KindZoneExpunge, p.Stages[0].Kind)
	assert.Equal(t, "zone/z", p.Stages[0].Updates[0].Target)
	require.NoError(t, p.ValidateDecoded(map[int]bool{0: true}), "a valid plan name and stage")

	ro := rollout.RolloutInput{Name: "q3"}
	p, err = dryRunPlan(update{Kind: workflows.KindRollout, Input: ro})
	require.NoError(t, err)
	assert.Equal(t, "q3", p.Name)
}
