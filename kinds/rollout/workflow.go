package rollout

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Rollout runs a plan.
func Rollout(ctx workflow.Context, in RolloutInput) (RolloutResult, error) {
	r := newRollout(in)
	if err := r.setup(ctx); err != nil {
		return RolloutResult{Name: in.Name}, err
	}
	return r.run(ctx)
}

func (r *rollout) setup(ctx workflow.Context) error {
	if err := r.in.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "InvalidPlan", nil)
	}
	r.approvals.bound = workflow.GetVersion(ctx, boundDigestVersion, workflow.DefaultVersion, 1) >= 1
	if err := r.in.refuseRunState(); err != nil && workflow.GetVersion(ctx, runStateVersion, workflow.DefaultVersion, 1) >= 1 {
		return err
	}
	if r.approvals.bound {
		if err := r.in.refuseMismatchedTargets(); err != nil {
			return err
		}
	}
	r.result.Name = r.in.Name
	total := 0
	for _, st := range r.in.Stages {
		total += len(st.Updates)
	}
	r.progress = workflows.Progress{Kind: workflows.KindRollout, Target: "plan/" + r.in.Name, State: workflows.StateRunning,
		Started: workflow.Now(ctx), Total: int64(total), Unit: "updates",
		Counts: map[string]int{"done": 0, "running": 0, "failed": 0, "skipped": 0}}
	l, err := workflows.NewLifecycle(ctx, &r.progress, "", nil, func() workflows.Progress { return r.progress })
	if err != nil {
		return err
	}
	r.l = l
	if err := workflow.SetQueryHandler(ctx, GatePlanQuery, func() (*StagePlan, error) { return r.approvals.plan.forRun(workflow.GetInfo(ctx).OriginalRunID), nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, ExplainQuery, func() (Explanation, error) { return r.explain(), nil }); err != nil {
		return err
	}
	workflows.ListenPauseResume(ctx, r.setPaused)
	return workflow.SetUpdateHandlerWithOptions(ctx, workflows.ApproveUpdate, r.approvals.approve,
		workflow.UpdateHandlerOptions{Validator: r.approvals.validate})
}

func (r *rollout) run(ctx workflow.Context) (RolloutResult, error) {
	err := r.approvals.readMinimum(ctx)
	if err == nil {
		err = r.approvals.verifyStart(ctx)
	}
	if err != nil {
		for _, st := range r.in.Stages {
			for _, u := range st.Updates {
				r.skip(st.Name, u) // nothing started
			}
		}
		return r.result, r.end(ctx, err, "start not verified: "+failure.Line(err))
	}
	r.notifier.watchStalls(ctx)
	for _, st := range r.in.Stages {
		gated := r.approvals.gated(st)
		if gated {
			if err := r.approvals.await(ctx, st); err != nil {
				if temporal.IsCanceledError(err) {
					for _, u := range st.Updates {
						r.skip(st.Name, u) // the gated stage never started
					}
				}
				return r.result, r.cancelled(ctx, st.Name, err)
			}
		}
		if !gated {
			r.approvals.approved = nil
		}
		failed, stop, err := r.runStage(ctx, st)
		if err != nil {
			return r.result, r.cancelled(ctx, st.Name, err)
		}
		if stop != nil {
			return r.result, r.abort(ctx, st, stop)
		}
		if st.budgetApplies() && failed > st.FailureBudget {
			r.skipRest(st.Name)
			msg := fmt.Sprintf("stage %s: %d failed, budget %d", st.Name, failed, st.FailureBudget)
			return r.result, r.end(ctx, temporal.NewNonRetryableApplicationError(msg, failure.FailureBudget, nil), msg)
		}
	}
	done := fmt.Sprintf("%d updates done", r.progress.Counts["done"])
	if r.result.Refused > 0 {
		done += fmt.Sprintf(", %d refused (another update held the target, or it drifted from the approved plan)", r.result.Refused)
	}
	return r.result, r.end(ctx, nil, done)
}
