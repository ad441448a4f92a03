package mgsupdate_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Review: at a disabled target, the current target's pending_mgs_updates
// do not say what Nexus's MGS update driver is doing. Execution is skipped
// (omicron nexus/src/app/background/tasks/blueprint_execution.rs:126), so
// the driver keeps the pending updates last sent from an enabled target
// (nexus/reconfigurator/execution/src/lib.rs:769, a watch channel), while
// the planner keeps making disabled targets (blueprint_planner.rs:290
// copies `enabled`). A disabled target is not "no owner": an SP update
// stops there as a host flash does.
func TestReviewSPFirmwareStopsAtADisabledTarget(t *testing.T) {
	st := newMGSStack(t, func(s *spec.Spec) { s.Racks[0].Owners = spec.RackOwners{MGSUpdates: spec.Off()} })
	lc, tg, _ := st.targetBlueprint()
	_, err := lc.SetTargetEnabled(context.Background(), tg.TargetID, false)
	require.NoError(t, err)

	msg := st.failsWith(workflows.KindSPFirmware, st.spInput(1, "1.1.0"), mgsupdate.SPFirmwareUpdate, 1, failure.TargetDisabled)
	assert.Contains(t, msg, "is disabled")
}
