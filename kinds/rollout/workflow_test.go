package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/kinds"
	"github.com/fleetsaga/fleetsaga/workflows"
)

const kindTest workflows.Kind = "test-update"

type testInput struct {
	Name string        `json:"name"`
	Take time.Duration `json:"take"`
	Fail bool          `json:"fail"`
	// FailType fails the update with this failure type (a class for
	// the rollout's thresholds).
	FailType string `json:"failType,omitempty"`
	// Busy: the ledger refuses the update's intent (another update holds
	// its target).
	Busy bool `json:"busy,omitempty"`
	// Compensate is how long the update's compensation takes when cancelled.
	Compensate time.Duration `json:"compensate,omitempty"`
	// Artifact is an image the update would deliver (digest_binding_test.go).
	Artifact *testArtifact `json:"artifact,omitempty"`
}

func (t *testInput) Target() string          { return "test/" + t.Name }
func (t *testInput) ArtifactVersion() string { return "" }
func (t *testInput) Validate() error         { return nil }

// spans records when each test update ran (workflow time), to check
// concurrency and exclusivity.
type span struct {
	name       string
	start, end time.Time
}

var spans []span

func testUpdate(ctx workflow.Context, in testInput) (map[string]any, error) {
	start := workflow.Now(ctx)
	if in.Busy {
		return nil, temporal.NewNonRetryableApplicationError("target "+in.Target()+" is busy", failure.TargetBusy, nil)
	}
	if err := workflow.Sleep(ctx, in.Take); err != nil {
		if in.Compensate > 0 && temporal.IsCanceledError(err) {
			// A compensation that takes a while, on a disconnected context.
			dctx, _ := workflow.NewDisconnectedContext(ctx)
			_ = workflow.Sleep(dctx, in.Compensate)
			spans = append(spans, span{in.Name + "/compensated", start, workflow.Now(dctx)})
		}
		return nil, err
	}
	spans = append(spans, span{in.Name, start, workflow.Now(ctx)})
	if in.FailType != "" {
		return nil, temporal.NewNonRetryableApplicationError("device said no", in.FailType, nil)
	}
	if in.Fail {
		return nil, errors.New("device said no")
	}
	return map[string]any{"outcome": "completed"}, nil
}

func init() {
	kinds.Kinds[kindTest] = kinds.KindInfo{Workflow: testUpdate, NewInput: func() workflows.UpdateInput { return &testInput{} }}
}

func updates(specs ...testInput) []PlanUpdate {
	var out []PlanUpdate
	for _, s := range specs {
		b, _ := json.Marshal(s)
		out = append(out, PlanUpdate{Target: s.Target(), Input: b})
	}
	return out
}

func newRolloutEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(Rollout)
	env.RegisterWorkflow(testUpdate)
	env.RegisterActivity(&RolloutActivities{})
	env.RegisterActivity(&activities.ApprovalActivities{})
	var aa *activities.ApprovalActivities // no ledger here: an opened gate's record is written
	env.OnActivity(aa.SpendGateApprovals, mock.Anything, mock.Anything).Return(nil).Maybe()
	spans = nil
	return env
}

func maxOverlap(names ...string) int {
	in := map[string]bool{}
	for _, n := range names {
		in[n] = true
	}
	best := 0
	for _, a := range spans {
		if !in[a.name] {
			continue
		}
		n := 0
		for _, b := range spans {
			if in[b.name] && b.start.Before(a.end) && a.start.Before(b.end) {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}

func TestRolloutKeepsConcurrencyAndExclusiveGroups(t *testing.T) {
	env := newRolloutEnv(t)
	in := RolloutInput{Name: "r1", Stages: []Stage{{
		Name: "s1", Kind: kindTest, Concurrency: 3,
		Exclusive: [][]string{{"test/a", "test/b"}},
		Updates: updates(testInput{Name: "a", Take: time.Minute}, testInput{Name: "b", Take: time.Minute},
			testInput{Name: "c", Take: time.Minute}, testInput{Name: "d", Take: time.Minute}, testInput{Name: "e", Take: time.Minute}),
	}}}
	env.ExecuteWorkflow(Rollout, in)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res RolloutResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Len(t, res.Outcomes, 5)
	require.Len(t, spans, 5)
	require.Equal(t, 1, maxOverlap("a", "b"), "a and b share an exclusive group")
	require.LessOrEqual(t, maxOverlap("a", "b", "c", "d", "e"), 3)
}

func TestRolloutWaitsForApprovalAndRecordsIt(t *testing.T) {
	env := newRolloutEnv(t)
	var recorded []string
	var aa *activities.ApprovalActivities
	env.OnActivity(aa.VerifyApproval, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.VerifyApprovalInput) (activities.VerifyApprovalResult, error) {
			recorded = append(recorded, fmt.Sprint(in))
			return activities.VerifyApprovalResult{Principal: approval.Principal{Name: in.By}}, nil
		})
	in := RolloutInput{Name: "r2", Stages: []Stage{
		{Name: "first", Kind: kindTest, Concurrency: 1, Updates: updates(testInput{Name: "a", Take: time.Minute})},
		{Name: "second", Kind: kindTest, Concurrency: 1, Approval: true, Updates: updates(testInput{Name: "b", Take: time.Minute})},
	}}
	env.RegisterDelayedCallback(func() {
		plan := gatePlanNow(t, env)
		env.UpdateWorkflow(workflows.ApproveUpdate, "1", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("approval rejected: %v", err) },
			OnAccept: func() {}, OnComplete: func(any, error) {},
		}, workflows.Approval{By: "alice", Reason: "canary healthy", Stage: plan.Stage, PlanDigest: plan.Digest})
	}, 3*time.Hour)
	env.ExecuteWorkflow(Rollout, in)
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, recorded, 1)
	require.Contains(t, recorded[0], "alice")
	require.Len(t, spans, 2)
	require.False(t, spans[1].start.Before(spans[0].start.Add(3*time.Hour)), "stage second must not start before the approval")
}

func TestRolloutRejectsApprovalWhenNotAtAGate(t *testing.T) {
	env := newRolloutEnv(t)
	in := RolloutInput{Name: "r3", Stages: []Stage{{Name: "s", Kind: kindTest, Concurrency: 1,
		Updates: updates(testInput{Name: "a", Take: time.Hour})}}}
	rejected := false
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.ApproveUpdate, "1", &testsuite.TestUpdateCallback{
			OnReject: func(error) { rejected = true }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, workflows.Approval{By: "bob", Reason: "why not"})
	}, time.Minute)
	env.ExecuteWorkflow(Rollout, in)
	require.NoError(t, env.GetWorkflowError())
	require.True(t, rejected)
}

func TestRolloutStopsAtFailureBudgetAndSkipsTheRest(t *testing.T) {
	env := newRolloutEnv(t)
	in := RolloutInput{Name: "r4", Stages: []Stage{
		{Name: "s1", Kind: kindTest, Concurrency: 1, Updates: updates(
			testInput{Name: "a", Take: time.Minute, Fail: true}, testInput{Name: "b", Take: time.Minute})},
		{Name: "s2", Kind: kindTest, Concurrency: 1, Updates: updates(testInput{Name: "c", Take: time.Minute})},
	}}
	env.ExecuteWorkflow(Rollout, in)
	require.Error(t, env.GetWorkflowError())
	require.Contains(t, env.GetWorkflowError().Error(), "FailureBudgetExceeded")
	require.Len(t, spans, 1, "nothing starts after the budget is exceeded")
}

// A target another update holds (another rollout's, or one started by
// hand) is refused, not failed: it does not count against the stage's
// failure budget, and the rollout goes on.
func TestRolloutRefusesABusyTargetWithoutSpendingTheBudget(t *testing.T) {
	env := newRolloutEnv(t)
	in := RolloutInput{Name: "r-busy", Stages: []Stage{
		{Name: "s1", Kind: kindTest, Concurrency: 1, Updates: updates(
			testInput{Name: "a", Busy: true}, testInput{Name: "b", Take: time.Minute})},
	}}
	env.ExecuteWorkflow(Rollout, in)
	require.NoError(t, env.GetWorkflowError())
	var res RolloutResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, 0, res.Failed)
	require.Equal(t, 1, res.Refused)
	for _, o := range res.Outcomes {
		if o.Target == "test/a" {
			require.Equal(t, StateRefused, o.State)
			require.Equal(t, failure.TargetBusy, o.Outcome)
		}
	}
}

func TestRolloutPauseHoldsNewStarts(t *testing.T) {
	env := newRolloutEnv(t)
	in := RolloutInput{Name: "r5", Stages: []Stage{{Name: "s", Kind: kindTest, Concurrency: 1,
		Updates: updates(testInput{Name: "a", Take: time.Minute}, testInput{Name: "b", Take: time.Minute})}}}
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.PauseSignal, nil) }, 30*time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.ResumeSignal, nil) }, 5*time.Hour)
	env.ExecuteWorkflow(Rollout, in)
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, spans, 2)
	require.Equal(t, time.Minute, spans[0].end.Sub(spans[0].start), "the running update finished while paused")
	require.False(t, spans[1].start.Before(spans[0].start.Add(5*time.Hour)), "b started only after resume")
}

func TestRolloutPlanValidation(t *testing.T) {
	bad := RolloutInput{Name: "Bad Name", Stages: []Stage{{Name: "s", Kind: "nope", Concurrency: 0,
		Exclusive: [][]string{{"test/x"}}, Updates: updates(testInput{Name: "a"}, testInput{Name: "a"})}}}
	err := bad.Validate()
	require.Error(t, err)
	for _, want := range []string{"plan name", "unknown or unavailable kind", "concurrency", "appears twice", "at least two", "not a target"} {
		require.ErrorContains(t, err, want)
	}
}

// A cancelled rollout waits for its running children to finish their
// compensations before it ends, skips what never started, and publishes
// the cancelled state (the search attribute no longer says running).
func TestRolloutCancelWaitsForChildrenAndPublishesCancelled(t *testing.T) {
	env := newRolloutEnv(t)
	var states []string
	var cancelledAt time.Time
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		if v, ok := args.Get(0).(temporal.SearchAttributes).GetKeyword(workflows.SAState); ok {
			states = append(states, v)
			if v == string(workflows.StateCancelled) {
				cancelledAt = env.Now()
			}
		}
	}).Return(nil)
	in := RolloutInput{Name: "rc", Stages: []Stage{
		{Name: "s1", Kind: kindTest, Concurrency: 2, Updates: updates(
			testInput{Name: "a", Take: time.Hour, Compensate: 10 * time.Minute},
			testInput{Name: "b", Take: time.Hour, Compensate: 20 * time.Minute},
			testInput{Name: "c", Take: time.Hour})},
		{Name: "s2", Kind: kindTest, Concurrency: 1, Updates: updates(testInput{Name: "d"})},
	}}
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(Rollout, in)
	require.True(t, env.IsWorkflowCompleted())
	require.True(t, temporal.IsCanceledError(env.GetWorkflowError()), "%v", env.GetWorkflowError())
	var done []string
	for _, s := range spans {
		done = append(done, s.name)
	}
	require.ElementsMatch(t, []string{"a/compensated", "b/compensated"}, done, "both running children compensated")
	require.NotEmpty(t, states)
	require.Equal(t, string(workflows.StateCancelled), states[len(states)-1])
	for _, s := range spans {
		require.False(t, cancelledAt.Before(s.end), "the rollout ended (%v) before %s (%v)", cancelledAt, s.name, s.end)
	}
	v, err := env.QueryWorkflow(workflows.ProgressQuery)
	require.NoError(t, err)
	var p workflows.Progress
	require.NoError(t, v.Get(&p))
	require.Equal(t, workflows.StateCancelled, p.State)
	require.Equal(t, 2, p.Counts["skipped"], "c and d never started")
}
