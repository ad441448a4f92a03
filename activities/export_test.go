package activities

import (
	"context"
	"testing"
)

// PlayRun makes the activities of t see run as their current run ID, as
// a reset run's would (the test environment has one fixed run ID).
func PlayRun(t *testing.T, run string) {
	prev := currentRun
	currentRun = func(context.Context) string { return run }
	t.Cleanup(func() { currentRun = prev })
}
