package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A run terminated before its first workflow task completed ran on no
// build: the new-build invariant has nothing to check there (seed 3 once
// failed on an agent install that chaos terminated within 60 ms of its
// start, after the switch: its only task failed with the terminate).
func TestNewBuildIgnoresARunThatCompletedNoWorkflowTask(t *testing.T) {
	e := cleanEvidence()
	e.newBuildAt = e.workflows[0].Start.Add(-time.Minute)
	for _, w := range e.workflows {
		w.Build = newBuild.BuildID
	}
	e.workflows[1].Build = ""
	for name, vs := range violationsOf(e) {
		if strings.HasPrefix(name, "a new build") {
			assert.Empty(t, vs)
		}
	}
}
