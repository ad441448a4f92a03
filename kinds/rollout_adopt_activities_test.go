package kinds

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/testsuite"
)

// A long poll for the adopted update can end with the server's own
// DEADLINE_EXCEEDED a moment before the poll's context expires (the server
// enforces the deadline the client sent). That is a poll that found
// nothing yet, not the update's end (make test, the drift reset test: the
// adopted install was reported failed "context deadline exceeded" while it
// went on and fixed the drift).
func TestAdoptUpdateTakesAServerDeadlineForAnEmptyPoll(t *testing.T) {
	c := &mocks.Client{}
	c.On("DescribeWorkflowExecution", mock.Anything, "child", "").Return(&workflowservice.DescribeWorkflowExecutionResponse{
		WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
			Execution:       &commonpb.WorkflowExecution{WorkflowId: "child", RunId: "r1"},
			ParentExecution: &commonpb.WorkflowExecution{WorkflowId: "parent"},
		}}, nil)
	run := &mocks.WorkflowRun{}
	run.On("Get", mock.Anything, mock.Anything).Return(serviceerror.NewDeadlineExceeded("context deadline exceeded")).Once()
	run.On("Get", mock.Anything, mock.Anything).Return(nil).Once()
	c.On("GetWorkflow", mock.Anything, "child", "r1").Return(run)

	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(&RolloutActivities{Temporal: c})
	v, err := env.ExecuteActivity((&RolloutActivities{}).AdoptUpdate, AdoptUpdateInput{WorkflowID: "child", Parent: "parent"})
	require.NoError(t, err)
	var res AdoptUpdateResult
	require.NoError(t, v.Get(&res))
	require.True(t, res.Ours)
	require.Empty(t, res.Error, "an empty poll is not the update's end")
	run.AssertNumberOfCalls(t, "Get", 2)
}
