package workflows

import (
	"go.temporal.io/sdk/workflow"
)

// ListenPauseResume applies the operator's pause and resume signals with
// setPaused until the workflow ends. Fan-outs and rollouts use it: running
// steps finish, no new ones start while paused.
func ListenPauseResume(ctx workflow.Context, setPaused func(workflow.Context, bool)) {
	pause := workflow.GetSignalChannel(ctx, PauseSignal)
	resume := workflow.GetSignalChannel(ctx, ResumeSignal)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(pause, func(ch workflow.ReceiveChannel, _ bool) { ch.Receive(ctx, nil); setPaused(ctx, true) })
			sel.AddReceive(resume, func(ch workflow.ReceiveChannel, _ bool) { ch.Receive(ctx, nil); setPaused(ctx, false) })
			sel.Select(ctx)
			if ctx.Err() != nil {
				return
			}
		}
	})
}
