package rollout

import (
	"fmt"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// runStateVersion marks the rollouts that refuse, at their start, a plan
// whose update input holds its workflow's own continue-as-new state
// (workflows.Continues). It is read only for such a plan: a rollout of
// any other plan records no marker, and one of such a plan started before
// it replays without the marker and goes on as it did. The
// DefaultVersion branch may go once no rollout started before it can be
// open.
const runStateVersion = "plan-refuses-run-state"

// ValidateStart implements workflows.Continues for a plan: it refuses an
// update whose input holds state only that update's workflow writes (an
// agent install's carry), which would hand the child a plan nobody
// approved. An input that does not decode is left to the update.
func (in RolloutInput) ValidateStart() error {
	return in.eachUpdate(func(st Stage, i int, u PlanUpdate, dec workflows.UpdateInput) error {
		if err := workflows.CheckStart(dec); err != nil {
			return fmt.Errorf("stage %s updates[%d] (%s): %w", st.Name, i, u.Target, err)
		}
		return nil
	})
}

// refuseRunState is ValidateStart as the workflow's typed error.
func (in RolloutInput) refuseRunState() error {
	return planRefused(in.ValidateStart(), failure.InvalidInput)
}
