package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/schedule"
)

// A dry run's stage times: a stage starts in the next window, a freeze
// pushes the next stage past it, and a stage longer than its window
// continues in the next one.
func TestStageTimesFollowWindowsAndFreezes(t *testing.T) {
	mon := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC) // a Monday
	cal := &Calendar{Calendar: schedule.Calendar{
		Windows: []schedule.Window{{Days: []string{"mon", "tue", "wed", "thu", "fri"}, Start: "12:00", Duration: 2 * time.Hour}},
		Freezes: []schedule.Freeze{{From: mon.Add(26 * time.Hour), To: mon.Add(50 * time.Hour), Reason: "board meeting"}}}}
	got := StageTimes(cal, []StagePlan{{Stage: "canary", Estimate: time.Hour}, {Stage: "rest", Estimate: 3 * time.Hour}}, mon)
	require.Equal(t, mon.Add(2*time.Hour), got[0].Start, "the canary waits for noon")
	require.Contains(t, got[0].Waits, "outside the maintenance windows")
	require.Equal(t, mon.Add(3*time.Hour), got[1].Start, "the rest follows within the window")
	// One hour on Monday; Tuesday's window is frozen; two hours Wednesday.
	require.Equal(t, time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC), got[1].End)
	require.Contains(t, got[1].Waits, "spans more than one window")

	require.Equal(t, mon.Add(time.Hour), StageTimes(nil, []StagePlan{{Stage: "x", Estimate: time.Hour}}, mon)[0].End)
}
