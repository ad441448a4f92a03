package mgsupdate

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"

	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// The checks accept what the activities return and reject what an
// operator could type instead: no update, another update, an unknown
// outcome, a "complete" the SP's status does not show.
func TestStepResultChecks(t *testing.T) {
	ours, other := uuid.New(), uuid.New()
	complete := WaitUpdateResult{UpdateID: ours, Outcome: WaitComplete, Status: mgs.UpdateStatus{State: mgs.UpdateComplete, ID: ours}}
	for name, c := range map[string]struct {
		err error
		ok  bool
	}{
		"start started":          {checkStart(ours)(StartUpdateResult{UpdateID: ours, Started: true}), true},
		"start busy":             {checkStart(ours)(StartUpdateResult{UpdateID: ours, Busy: true, Current: mgs.UpdateStatus{State: mgs.UpdateInProgress, ID: other}}), true},
		"start with its wait":    {checkStart(ours)(StartUpdateResult{UpdateID: ours, Started: true, Wait: &complete}), true},
		"start empty":            {checkStart(ours)(StartUpdateResult{}), false},
		"start of another":       {checkStart(ours)(StartUpdateResult{UpdateID: other, Started: true}), false},
		"start neither":          {checkStart(ours)(StartUpdateResult{UpdateID: ours}), false},
		"start busy with none":   {checkStart(ours)(StartUpdateResult{UpdateID: ours, Busy: true}), false},
		"start, made-up wait":    {checkStart(ours)(StartUpdateResult{UpdateID: ours, Started: true, Wait: &WaitUpdateResult{Outcome: WaitComplete}}), false},
		"wait complete":          {checkWait(ours, true)(complete), true},
		"wait complete, no SP":   {checkWait(ours, true)(WaitUpdateResult{UpdateID: ours, Outcome: WaitComplete}), false},
		"wait unknown outcome":   {checkWait(ours, true)(WaitUpdateResult{UpdateID: ours, Outcome: "done"}), false},
		"wait foreign's outcome": {checkWait(ours, true)(WaitUpdateResult{UpdateID: ours, Outcome: WaitFree}), false},
		"wait foreign free":      {checkWait(other, false)(WaitUpdateResult{UpdateID: other, Outcome: WaitFree}), true},
		"post activated":         {checkPost(ours, "1.1.0")(PostUpdateResult{UpdateID: ours, Outcome: PostActivated, Active: "1.1.0"}), true},
		"post activated, other":  {checkPost(ours, "1.1.0")(PostUpdateResult{UpdateID: ours, Outcome: PostActivated, Active: "1.0.0"}), false},
		"post empty":             {checkPost(ours, "1.1.0")(PostUpdateResult{}), false},
	} {
		if c.ok {
			assert.NoError(t, c.err, name)
		} else {
			assert.Error(t, c.err, name)
		}
	}
}
