package workflows

import (
	"fmt"

	"github.com/google/uuid"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
)

// followStepProgress moves the progress query and the Web UI's current
// details during a long device step: the step's activity signals its
// workflow at each tenth of the way (activities.ProgressReporter, which
// says why a signal), and this receives the signals for the whole run. It
// issues no command, so it changes no history of a workflow that is never
// signalled (the rollout, the fan-outs).
func (l *Lifecycle) followStepProgress(ctx workflow.Context) {
	ch := workflow.GetSignalChannel(ctx, activities.ProgressSignal)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var r activities.ProgressReport
			if !ch.Receive(ctx, &r) {
				return
			}
			l.stepProgress(ctx, r)
		}
	})
}

// stepProgress takes one report: only the current attempt's, never
// backwards within a step (a late signal of an earlier activity attempt
// arrives after a newer one).
func (l *Lifecycle) stepProgress(ctx workflow.Context, r activities.ProgressReport) {
	if l.progress.State != StateRunning || r.Total <= 0 {
		return
	}
	if r.AttemptID != uuid.Nil && (l.Attempt == nil || l.Attempt.ID != r.AttemptID) {
		return
	}
	if r.Total == l.progress.Total && r.Done <= l.progress.Done {
		return
	}
	l.progress.Done, l.progress.Total = r.Done, r.Total
	detail := append(append([]string(nil), l.detail...), StepProgressText(r.Done, r.Total, l.progress.Unit))
	setCurrentDetails(ctx, l.progress.State, l.progress.Phase, detail...)
}

// StepProgressText is how the current details show a step's progress:
// "40% (4096 of 10240 bytes)".
func StepProgressText(done, total int64, unit string) string {
	if unit == "" {
		unit = "done"
	}
	return fmt.Sprintf("%d%% (%d of %d %s)", done*100/total, done, total, unit)
}
