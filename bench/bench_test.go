package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

func TestPlanSplitKeepsTheIdealReachable(t *testing.T) {
	for _, c := range []struct{ n, p int }{{100, 100}, {1000, 100}, {5000, 100}, {1000, 1000}, {401, 100}, {7, 3}} {
		sizes, concs, err := planSplit(c.n, c.p)
		require.NoError(t, err)
		waves := (c.n + c.p - 1) / c.p
		total, slots := 0, 0
		for i := range sizes {
			require.LessOrEqual(t, sizes[i], maxPlanUpdates)
			require.LessOrEqual(t, (sizes[i]+concs[i]-1)/concs[i], waves, "plan %d of n=%d p=%d", i, c.n, c.p)
			total += sizes[i]
			slots += concs[i]
		}
		require.Equal(t, c.n, total)
		require.LessOrEqual(t, slots, c.p)
	}
	_, _, err := planSplit(50000, 100) // 500 waves do not fit a 400-update plan
	require.Error(t, err)
}

func TestIdealMakespan(t *testing.T) {
	require.Equal(t, 10*time.Second, idealMakespan(1000, 100, time.Second))
	require.Equal(t, 11*time.Second, idealMakespan(1001, 100, time.Second))
	require.Equal(t, time.Second, idealMakespan(5, 100, time.Second))
}

func TestSPDeviceTimeFollowsFleetsim(t *testing.T) {
	s := &spec.Spec{SpeedUp: 1, Timings: benchTimings()}
	// Real speed: prepare 2 s = 100 ticks; 1 MiB at 256 KiB/s in chunks of
	// 5242 B = 201 chunks; complete at tick 100+201-1 = 300 → 6 s; reset 20 s.
	d, _ := spDeviceTime(s, 1<<20)
	require.Equal(t, 26*time.Second, d)
	s.SpeedUp = 30
	d, model := spDeviceTime(s, 1<<20)
	require.Equal(t, 200*time.Millisecond+s.Scale(20*time.Second), d, model)
	a, _ := agentDeviceTime(s)
	require.Equal(t, 1500*time.Millisecond, a)
}

func TestParseExposition(t *testing.T) {
	m, err := parseExposition(strings.NewReader(`# HELP x
temporal_workflow_task_execution_latency_seconds_count{namespace="default",workflow_type="A"} 3
temporal_workflow_task_execution_latency_seconds_count{namespace="default",workflow_type="B"} 4
temporal_activity_execution_latency_seconds_count{activity_type="X"} 5
temporal_sticky_cache_miss_total 2
temporal_workflow_task_execution_latency_seconds_bucket{le="0.1"} 99
`))
	require.NoError(t, err)
	w := workerTasks(m)
	require.Equal(t, 7.0, w.WorkflowTasks)
	require.Equal(t, 5.0, w.ActivityTasks)
	require.Equal(t, 2.0, w.StickyCacheMiss)
}
