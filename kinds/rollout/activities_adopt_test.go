package rollout

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
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

// A reset run finds an ended update under the ID it is about to start.
// It is its own only when a run of this rollout started it: an update
// an earlier rollout of the same plan ran is not adopted (it is started
// again), while one a reset run of this rollout started is.
func TestAdoptUpdateTakesOnlyThisRolloutsEndedUpdate(t *testing.T) {
	for _, tc := range []struct {
		name, original string
		ours           bool
	}{{"an earlier rollout of the plan", "older-rollout", false}, {"a reset run of this rollout", "orig", true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := &mocks.Client{}
			c.On("DescribeWorkflowExecution", mock.Anything, "child", "").Return(&workflowservice.DescribeWorkflowExecutionResponse{
				WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
					Execution:       &commonpb.WorkflowExecution{WorkflowId: "child", RunId: "r1"},
					ParentExecution: &commonpb.WorkflowExecution{WorkflowId: "parent", RunId: "parent-run"},
					Status:          enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
				}}, nil)
			iter := &mocks.HistoryEventIterator{}
			iter.On("HasNext").Return(true)
			iter.On("Next").Return(&historypb.HistoryEvent{Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{
				WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{OriginalExecutionRunId: tc.original}}}, nil)
			c.On("GetWorkflowHistory", mock.Anything, "parent", "parent-run", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT).Return(iter)
			run := &mocks.WorkflowRun{}
			run.On("Get", mock.Anything, mock.Anything).Return(nil)
			c.On("GetWorkflow", mock.Anything, "child", "r1").Return(run)

			var s testsuite.WorkflowTestSuite
			env := s.NewTestActivityEnvironment()
			env.RegisterActivity(&RolloutActivities{Temporal: c})
			v, err := env.ExecuteActivity((&RolloutActivities{}).AdoptUpdate, AdoptUpdateInput{WorkflowID: "child", Parent: "parent", ParentRun: "orig"})
			require.NoError(t, err)
			var res AdoptUpdateResult
			require.NoError(t, v.Get(&res))
			require.Equal(t, tc.ours, res.Ours)
			require.True(t, res.Ended)
		})
	}
}
