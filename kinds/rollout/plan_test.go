package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func TestPlanDriftSaysWhatWasPlannedAndWhatIsFound(t *testing.T) {
	row := func(dev, cur, want string, a activities.PlanAction) workflows.PlanRow {
		return workflows.PlanRow{Device: dev, Current: cur, Desired: want, Action: a}
	}
	approved := []workflows.PlanRow{row("", "1.0.4", "1.0.5", activities.PlanUpdate)}
	assert.Empty(t, PlanDrift(approved, approved))
	assert.Equal(t, "planned 1.0.4 → 1.0.5, found 1.0.6", PlanDrift(approved, []workflows.PlanRow{row("", "1.0.6", "1.0.5", activities.PlanRefuse)}))
	servers := []workflows.PlanRow{row("cn0 vm-agent", "1.0.0", "1.1.0", activities.PlanUpdate), row("cn1", "", "", activities.PlanSkip)}
	assert.Equal(t, "cn1: planned skip (- → -), now update (- → -)",
		PlanDrift(servers, []workflows.PlanRow{servers[0], row("cn1", "", "", activities.PlanUpdate)}), "an action that changed is named")
	assert.Contains(t, PlanDrift(servers, servers[:1]), "planned 2 rows, found 1")
}

func TestStageEstimateHonoursConcurrencyAndExclusiveGroups(t *testing.T) {
	st := Stage{Concurrency: 4, Updates: []PlanUpdate{{Target: "a"}, {Target: "b"}, {Target: "c"}, {Target: "d"}},
		Exclusive: [][]string{{"a", "b"}}}
	d := map[string]time.Duration{"a": time.Minute, "b": time.Minute, "c": time.Minute, "d": 0}
	assert.Equal(t, 2*time.Minute, stageEstimate(st, d), "a and b never at once")
	st.Exclusive = nil
	assert.Equal(t, time.Minute, stageEstimate(st, d), "three at once")
	st.Concurrency = 1
	assert.Equal(t, 3*time.Minute, stageEstimate(st, d), "one by one")
}
