package agents

import (
	"time"

	"github.com/fleetsaga/fleetsaga/workflows"
	"go.temporal.io/sdk/workflow"
)

// ownerCheckTimeout bounds one question to Temporal about the rollout.
const ownerCheckTimeout = 10 * time.Second

// watchParent stops an abandoned child whose rollout no longer runs.
// Children of the sliding window outlive the run that started them
// (ParentClosePolicy ABANDON, so continue-as-new does not stop them), which
// also means an operator's terminate of the rollout would leave them
// installing with nobody to book their ends. Every ParentCheck the child
// asks Temporal whether its rollout's workflow ID still runs; once it does
// not, the child's steps are cancelled: it ends its attempt and plan row
// as cancelled and releases its server, as on a cancel. The returned
// context runs the steps; orphaned says the watch stopped them.
func (s *agentServer) watchParent(ctx workflow.Context) (workflow.Context, *bool) {
	orphaned := new(bool)
	if s.in.ReportTo == "" {
		return ctx, orphaned
	}
	every := s.in.ParentCheck
	if every <= 0 {
		every = defaultParentCheck
	}
	steps, stop := workflow.WithCancel(ctx)
	workflow.Go(steps, func(wctx workflow.Context) {
		lctx := workflow.WithLocalActivityOptions(wctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: ownerCheckTimeout, RetryPolicy: workflows.LedgerRetry, ScheduleToCloseTimeout: every,
		})
		for workflow.Sleep(wctx, every) == nil {
			var running bool
			if err := workflow.ExecuteLocalActivity(lctx, workflows.LedgerActs.WorkflowRunning, s.in.ReportTo).Get(wctx, &running); err != nil {
				continue // Temporal could not tell: ask again next time
			}
			if !running {
				*orphaned = true
				stop()
				return
			}
		}
	})
	return steps, orphaned
}
