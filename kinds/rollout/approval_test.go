package rollout

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// An approval binds the stage and plan its approver saw. After the gate
// moved on to the next stage's plan, an approval read for the earlier one —
// sent without a digest, with the earlier plan's digest, or naming the
// earlier stage — is refused with what the gate shows now; only the
// approval of the plan shown lets the stage run.
func TestRolloutRefusesAnApprovalNotBoundToThePlanAtTheGate(t *testing.T) {
	env := newRolloutEnv(t)
	var recorded []activities.VerifyApprovalInput
	var aa *activities.ApprovalActivities
	env.OnActivity(aa.VerifyApproval, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.VerifyApprovalInput) (activities.VerifyApprovalResult, error) {
			recorded = append(recorded, in)
			return activities.VerifyApprovalResult{Principal: approval.Principal{Name: in.By}}, nil
		})
	in := RolloutInput{Name: "bound", Stages: []Stage{
		{Name: "canary", Kind: kindTest, Concurrency: 1, Approval: true, Updates: updates(testInput{Name: "a", Take: time.Minute})},
		{Name: "rest", Kind: kindTest, Concurrency: 1, Approval: true, Updates: updates(testInput{Name: "b", Take: time.Minute})},
	}}
	refused := map[string]string{}
	approve := func(id string, ap workflows.Approval) {
		env.UpdateWorkflow(workflows.ApproveUpdate, id, &testsuite.TestUpdateCallback{
			OnReject: func(err error) { refused[id] = err.Error() }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, ap)
	}
	var canary, rest StagePlan
	env.RegisterDelayedCallback(func() {
		canary = gatePlanNow(t, env)
		approve("alice", workflows.Approval{By: "alice", Reason: "canary plan reviewed", Stage: canary.Stage, PlanDigest: canary.Digest[:12]})
	}, time.Hour)
	env.RegisterDelayedCallback(func() {
		rest = gatePlanNow(t, env)
		// bob read the canary's plan; his approval arrives at the next gate.
		approve("bob without digest", workflows.Approval{By: "bob", Reason: "canary plan reviewed"})
		approve("bob with the canary's digest", workflows.Approval{By: "bob", Reason: "canary plan reviewed", Stage: canary.Stage, PlanDigest: canary.Digest[:12]})
		approve("bob naming the canary stage", workflows.Approval{By: "bob", Reason: "canary plan reviewed", Stage: canary.Stage, PlanDigest: rest.Digest[:12]})
		approve("carol", workflows.Approval{By: "carol", Reason: "rest plan reviewed", Stage: rest.Stage, PlanDigest: rest.Digest})
	}, 3*time.Hour)
	env.ExecuteWorkflow(Rollout, in)
	require.NoError(t, env.GetWorkflowError())

	require.Equal(t, "canary", canary.Stage)
	require.Equal(t, "rest", rest.Stage)
	for _, id := range []string{"bob without digest", "bob with the canary's digest", "bob naming the canary stage"} {
		require.Contains(t, refused, id, "an approval read for the canary's plan must not approve stage rest")
		require.Contains(t, refused[id], "stage rest", id)
		require.Contains(t, refused[id], rest.Digest[:12], id)
		require.Contains(t, refused[id], "look at it again", id)
	}
	require.NotContains(t, refused, "alice")
	require.NotContains(t, refused, "carol")
	require.Len(t, recorded, 2)
	require.Equal(t, []string{"alice", "carol"}, []string{recorded[0].By, recorded[1].By})
	require.Equal(t, []string{canary.Digest, rest.Digest}, []string{recorded[0].Gate.PlanDigest, recorded[1].Gate.PlanDigest})
	require.Len(t, spans, 2)
}

// gatePlanNow is the plan the rollout shows at its gate, as starter
// status and starter approve read it.
func gatePlanNow(t *testing.T, env *testsuite.TestWorkflowEnvironment) StagePlan {
	t.Helper()
	v, err := env.QueryWorkflow(GatePlanQuery)
	require.NoError(t, err)
	var sp *StagePlan
	require.NoError(t, v.Get(&sp))
	require.NotNil(t, sp, "the rollout shows no plan at its gate")
	return *sp
}

// At a gate that needs two approvers, the rollout counts distinct
// principals the worker verified: a refusal goes back to its approver
// with its reason and counts nothing, the same principal twice counts
// once, and the gate shows what it still needs until the second one.
func TestRolloutGateOpensOnceItsPolicyHasItsApprovers(t *testing.T) {
	env := newRolloutEnv(t)
	var aa *activities.ApprovalActivities
	env.OnActivity(aa.VerifyApproval, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.VerifyApprovalInput) (activities.VerifyApprovalResult, error) {
			if in.By == "mallory" {
				return activities.VerifyApprovalResult{}, temporal.NewNonRetryableApplicationError("approval refused (UnknownKey): key SHA256:x is not an allowed signer",
					failure.ApprovalRefused, nil, string(approval.ReasonUnknownKey))
			}
			require.Equal(t, approval.Policy{Approvers: 2}, in.Policy)
			return activities.VerifyApprovalResult{Principal: approval.Principal{Name: in.By}}, nil
		})
	in := RolloutInput{Name: "two", Stages: []Stage{
		{Name: "canary", Kind: kindTest, Concurrency: 1, Approval: true, ApprovalPolicy: &approval.Policy{Approvers: 2},
			Updates: updates(testInput{Name: "a", Take: time.Minute})},
	}}
	outcome := map[string]error{}
	approve := func(id, by string) {
		sp := gatePlanNow(t, env)
		env.UpdateWorkflow(workflows.ApproveUpdate, id, &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("%s rejected: %v", id, err) }, OnAccept: func() {},
			OnComplete: func(_ any, err error) { outcome[id] = err },
		}, workflows.Approval{By: by, Reason: "reviewed", Stage: sp.Stage, PlanDigest: sp.Digest})
	}
	var shown []string
	env.RegisterDelayedCallback(func() {
		shown = append(shown, gatePlanNow(t, env).StillNeeded)
		approve("mallory", "mallory")
		approve("alice", "alice")
		approve("alice again", "alice")
	}, time.Hour)
	env.RegisterDelayedCallback(func() {
		shown = append(shown, gatePlanNow(t, env).StillNeeded)
		approve("bob", "bob")
	}, 2*time.Hour)
	began := env.Now()
	env.ExecuteWorkflow(Rollout, in)
	require.NoError(t, env.GetWorkflowError())

	var app *temporal.ApplicationError
	require.ErrorAs(t, outcome["mallory"], &app)
	require.Equal(t, failure.ApprovalRefused, app.Type())
	require.Equal(t, "approval refused (UnknownKey): key SHA256:x is not an allowed signer", app.Message(), "the refusal's own sentence")
	var reason string
	require.NoError(t, app.Details(&reason))
	require.Equal(t, string(approval.ReasonUnknownKey), reason)
	for _, id := range []string{"alice", "alice again", "bob"} {
		require.NoError(t, outcome[id], id)
	}
	require.Equal(t, []string{"2 more approvals", "1 more approval, not by alice"}, shown)
	require.Len(t, spans, 1)
	require.False(t, spans[0].start.Before(began.Add(2*time.Hour)), "the stage must not start before the second approver")
}
