package workflows

import (
	"strings"

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

// Pausable tells from a workflow ID alone whether that workflow honours
// pause/resume: a rollout (plan/<name>) and an agent install's parent
// (dc/<agents>) do; its per-server children and every other kind do not.
// known is false when the ID is not a fleetsaga update ID (ask Temporal
// for its type instead).
func Pausable(workflowID string) (pausable, known bool) {
	kind, target, ok := ParseWorkflowID(workflowID)
	if !ok {
		return false, false
	}
	oneLevel := func(prefix string) bool {
		rest, ok := strings.CutPrefix(target, prefix)
		return ok && rest != "" && !strings.Contains(rest, "/")
	}
	switch kind {
	case KindRollout:
		return oneLevel("plan/"), true
	case KindAgentInstall:
		return oneLevel("dc/"), true
	case KindSPFirmware, KindHostFlash, KindHostRecovery, KindAgentDrift, KindBootImageBump, KindZoneExpunge:
		return false, true
	}
	return false, false
}
