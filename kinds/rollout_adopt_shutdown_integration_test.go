package kinds_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/fleetsaga/fleetsaga/kinds"
)

// An adopter's context ends for many reasons; only a cancel of the rollout
// (or of the activity) is passed on to the adopted update. A graceful
// worker shutdown, a pause or reset of the activity, a heartbeat that
// failed or found the workflow gone, and the deadline leave it running:
// the adopter is retried, or the rollout decides.
func TestAdoptUpdateCancelsItsUpdateOnlyOnARealCancel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cause  error // nil: the deadline
		cancel bool
	}{
		{"the rollout was cancelled", temporal.NewCanceledError(), true},
		{"a graceful worker shutdown", worker.ErrWorkerShutdown, false},
		{"the activity was paused", activity.ErrActivityPaused, false},
		{"the activity was reset", activity.ErrActivityReset, false},
		{"a heartbeat found the rollout gone", serviceerror.NewNotFound("workflow not found"), false},
		{"heartbeats failed until their timeout", serviceerror.NewUnavailable("frontend down"), false},
		{"the deadline", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &mocks.Client{}
			c.On("DescribeWorkflowExecution", mock.Anything, "child", "").Return(&workflowservice.DescribeWorkflowExecutionResponse{
				WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
					Execution:       &commonpb.WorkflowExecution{WorkflowId: "child", RunId: "r1"},
					ParentExecution: &commonpb.WorkflowExecution{WorkflowId: "parent"},
					Status:          enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
				}}, nil)
			bg, end := context.WithCancelCause(context.Background())
			defer end(nil)
			if tc.cause == nil {
				var stop context.CancelFunc
				bg, stop = context.WithTimeout(bg, 0)
				defer stop()
			}
			run := &mocks.WorkflowRun{}
			run.On("Get", mock.Anything, mock.Anything).Run(func(args mock.Arguments) {
				end(tc.cause) // the context ends while the adopter waits
				<-args.Get(0).(context.Context).Done()
			}).Return(context.Canceled)
			c.On("GetWorkflow", mock.Anything, "child", "r1").Return(run)
			c.On("CancelWorkflow", mock.Anything, "child", "").Return(nil).Maybe()

			var s testsuite.WorkflowTestSuite
			env := s.NewTestActivityEnvironment()
			env.SetWorkerOptions(worker.Options{BackgroundActivityContext: bg})
			env.RegisterActivity(&kinds.RolloutActivities{Temporal: c})
			_, err := env.ExecuteActivity((&kinds.RolloutActivities{}).AdoptUpdate, kinds.AdoptUpdateInput{WorkflowID: "child", Parent: "parent"})
			require.Error(t, err, "the adopter did not see its update end")
			if tc.cancel {
				c.AssertCalled(t, "CancelWorkflow", mock.Anything, "child", "")
			} else {
				c.AssertNotCalled(t, "CancelWorkflow", mock.Anything, "child", "")
			}
		})
	}
}
