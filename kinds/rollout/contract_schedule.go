package rollout

import (
	"fmt"
	"time"
)

// maxCalendarSteps bounds the walk through windows (a stage spread over
// more windows than this is reported as ending then).
const maxCalendarSteps = 1000

// StageTimes walks the stages' estimates through the calendar from
// start. Not workflow code: the starter calls it on a dry run's result.
func StageTimes(cal *Calendar, stages []StagePlan, start time.Time) []StageTime {
	out := make([]StageTime, 0, len(stages))
	t := start
	for _, sp := range stages {
		st := StageTime{Stage: sp.Stage}
		remaining := sp.Estimate
		for i := 0; i < maxCalendarSteps; i++ {
			if cal == nil {
				break
			}
			s := cal.At(t)
			if !s.Open {
				if st.Start.IsZero() && st.Waits == "" {
					st.Waits = s.Why()
				}
				if s.OpensAt.IsZero() {
					break
				}
				t = s.OpensAt
				continue
			}
			if st.Start.IsZero() {
				st.Start = t
			}
			if s.ClosesAt.IsZero() || !t.Add(remaining).After(s.ClosesAt) {
				break
			}
			remaining -= s.ClosesAt.Sub(t)
			t = s.ClosesAt
			if st.Waits == "" {
				st.Waits = fmt.Sprintf("spans more than one window (one closes %s)", s.ClosesAt.UTC().Format(time.RFC3339))
			}
		}
		if st.Start.IsZero() {
			st.Start = t
		}
		st.End = t.Add(remaining)
		t = st.End
		out = append(out, st)
	}
	return out
}
