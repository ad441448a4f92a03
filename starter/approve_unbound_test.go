package main

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"

	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// gateClient is a Temporal client whose rollout "r" waits at a gate
// showing sp; an approval that reaches it is refused with errSent.
func gateClient(sp rollout.StagePlan) *mocks.Client {
	c := &mocks.Client{}
	progress := &mocks.Value{}
	progress.On("Get", mock.Anything).Run(func(a mock.Arguments) {
		*a.Get(0).(*workflows.Progress) = workflows.Progress{State: workflows.StateRunning, Phase: workflows.PhaseAwaitingApproval}
	}).Return(nil)
	plan := &mocks.Value{}
	plan.On("Get", mock.Anything).Run(func(a mock.Arguments) { *a.Get(0).(**rollout.StagePlan) = &sp }).Return(nil)
	c.On("QueryWorkflow", mock.Anything, "r", "", workflows.ProgressQuery).Return(progress, nil)
	c.On("QueryWorkflow", mock.Anything, "r", "", rollout.GatePlanQuery).Return(plan, nil)
	c.On("UpdateWorkflow", mock.Anything, mock.Anything).Return(nil, errSent)
	return c
}

// A gate whose plan binds nothing but its rows (a rollout started on, or
// pinned to, a build from before plans were bound to their inputs) shows
// a digest of labels: the images' bytes and the real targets are not in
// it. starter approve refuses to sign it (exit 2, saying why) unless the
// approver says they reviewed the plan file itself.
func TestApproveRefusesAnUnboundPlanUnlessTold(t *testing.T) {
	digest := "3f9a000000000000000000000000000000000000000000000000000000000000"
	unbound := rollout.StagePlan{Stage: "sps", Digest: digest}
	ap := workflows.Approval{By: "alice", Reason: "reviewed", PlanDigest: digest}

	c := gateClient(unbound)
	err := approveReviewedPlan(context.Background(), c, "default", "r", ap, signFlags{}, false)
	var ee *exitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, exitUsage, ee.code, "%v", err)
	require.Contains(t, err.Error(), "--accept-unbound-plan")
	c.AssertNotCalled(t, "UpdateWorkflow", mock.Anything, mock.Anything)

	err = approveReviewedPlan(context.Background(), gateClient(unbound), "default", "r", ap, signFlags{}, true)
	require.ErrorIs(t, err, errSent, "told, it sends the approval")

	// A binding that does not hash to the digest shown (a worker
	// answering the query with a made-up one) is no binding.
	fake := unbound
	fake.Binding = &rollout.StageBinding{}
	c = gateClient(fake)
	err = approveReviewedPlan(context.Background(), c, "default", "r", ap, signFlags{}, false)
	require.ErrorAs(t, err, &ee)
	c.AssertNotCalled(t, "UpdateWorkflow", mock.Anything, mock.Anything)
}

// A bound plan is approved without the flag.
func TestApproveSendsABoundPlan(t *testing.T) {
	sp := rollout.StagePlan{Stage: "sps", Binding: &rollout.StageBinding{}}
	sp.Digest = sp.BoundDigest()
	ap := workflows.Approval{By: "alice", Reason: "reviewed", PlanDigest: sp.Digest}
	err := approveReviewedPlan(context.Background(), gateClient(sp), "default", "r", ap, signFlags{}, false)
	require.ErrorIs(t, err, errSent)
}

var errSent = errors.New("the approval was sent")
