package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// ResetPoint is where an operator resets a workflow to, as `temporal
// workflow reset` offers: the first workflow task, the last one, or any
// workflow task in between.
type ResetPoint string

const (
	ResetFirst ResetPoint = "first workflow task"
	ResetLast  ResetPoint = "last workflow task"
	ResetMid   ResetPoint = "a workflow task in the middle"
)

// ResetPoints are the three, in turn.
var ResetPoints = []ResetPoint{ResetFirst, ResetLast, ResetMid}

// ResetWorkflow resets the current run of workflow id to p, as an operator
// does with Temporal's tools, and returns the new run. The old run is
// terminated by the reset; the new one replays the history up to p under
// a new run ID and goes on from there.
func ResetWorkflow(t *testing.T, c client.Client, id string, p ResetPoint) client.WorkflowRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var tasks []int64
	var runID string
	iter := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			tasks = append(tasks, ev.GetEventId())
		}
	}
	require.NotEmpty(t, tasks, "no completed workflow task to reset to")
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	runID = desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	at := tasks[0]
	switch p {
	case ResetLast:
		at = tasks[len(tasks)-1]
	case ResetMid:
		at = tasks[len(tasks)/2]
	}
	resp, err := c.WorkflowService().ResetWorkflowExecution(ctx, &workflowservice.ResetWorkflowExecutionRequest{
		Namespace:                 namespaceOf(c),
		WorkflowExecution:         &commonpb.WorkflowExecution{WorkflowId: id, RunId: runID},
		Reason:                    "test: operator reset to the " + string(p),
		WorkflowTaskFinishEventId: at,
		RequestId:                 uuid.NewString(),
	})
	require.NoError(t, err, "reset %s to event %d (%s)", id, at, p)
	t.Logf("reset %s to event %d of %v (%s): run %s", id, at, tasks, p, resp.GetRunId())
	return c.GetWorkflow(context.Background(), id, resp.GetRunId())
}
