package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	activitypb "go.temporal.io/api/activity/v1"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
)

// The operator's activity tools, as the pinned CLI's `temporal activity`
// commands send them (pause, unpause, reset, update-options, complete,
// fail: the same frontend calls, by activity ID), for tests that use them
// on a running step.

// toolIdentity names the operator in the workflow's history.
const toolIdentity = "operator@testenv"

// RunningActivity waits until run id has a pending activity of type name
// that a worker has started, and returns it.
func RunningActivity(t *testing.T, c client.Client, id, name string, within time.Duration) *workflowpb.PendingActivityInfo {
	t.Helper()
	var found *workflowpb.PendingActivityInfo
	require.Eventually(t, func() bool {
		found = PendingActivity(t, c, id, name)
		return found != nil && found.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED
	}, within, 20*time.Millisecond, "no %s started in %s", name, id)
	return found
}

// PendingActivity is run id's pending activity of type name (nil: none).
func PendingActivity(t *testing.T, c client.Client, id, name string) *workflowpb.PendingActivityInfo {
	t.Helper()
	desc, err := c.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetActivityType().GetName() == name {
			return pa
		}
	}
	return nil
}

func execution(id string) *commonpb.WorkflowExecution {
	return &commonpb.WorkflowExecution{WorkflowId: id}
}

// PauseActivity is `temporal activity pause --activity-id`.
func PauseActivity(t *testing.T, c client.Client, id, activityID string) {
	t.Helper()
	_, err := c.WorkflowService().PauseActivity(context.Background(), &workflowservice.PauseActivityRequest{
		Namespace: namespaceOf(c), Execution: execution(id), Identity: toolIdentity,
		Activity: &workflowservice.PauseActivityRequest_Id{Id: activityID}, Reason: "test: operator pause",
	})
	require.NoError(t, err)
}

// UnpauseActivity is `temporal activity unpause --activity-id`.
func UnpauseActivity(t *testing.T, c client.Client, id, activityID string) {
	t.Helper()
	_, err := c.WorkflowService().UnpauseActivity(context.Background(), &workflowservice.UnpauseActivityRequest{
		Namespace: namespaceOf(c), Execution: execution(id), Identity: toolIdentity,
		Activity: &workflowservice.UnpauseActivityRequest_Id{Id: activityID},
	})
	require.NoError(t, err)
}

// ResetActivity is `temporal activity reset --activity-id
// [--reset-heartbeats]` (attempts restart at 1).
func ResetActivity(t *testing.T, c client.Client, id, activityID string, heartbeats bool) {
	t.Helper()
	_, err := c.WorkflowService().ResetActivity(context.Background(), &workflowservice.ResetActivityRequest{
		Namespace: namespaceOf(c), Execution: execution(id), Identity: toolIdentity,
		Activity: &workflowservice.ResetActivityRequest_Id{Id: activityID}, ResetHeartbeat: heartbeats,
	})
	require.NoError(t, err)
}

// ShortenActivity is `temporal activity update-options --activity-id
// --start-to-close-timeout d`: the running attempt's timeout becomes d.
func ShortenActivity(t *testing.T, c client.Client, id, activityID string, d time.Duration) {
	t.Helper()
	_, err := c.WorkflowService().UpdateActivityOptions(context.Background(), &workflowservice.UpdateActivityOptionsRequest{
		Namespace: namespaceOf(c), Execution: execution(id), Identity: toolIdentity,
		Activity:        &workflowservice.UpdateActivityOptionsRequest_Id{Id: activityID},
		ActivityOptions: &activitypb.ActivityOptions{StartToCloseTimeout: durationpb.New(d)},
		UpdateMask:      &fieldmaskpb.FieldMask{Paths: []string{"start_to_close_timeout"}},
	})
	require.NoError(t, err)
}

// CompleteActivity is `temporal activity complete --activity-id --result
// result`: the CLI sends the text as it is, one json/plain payload
// (temporalcli/commands.activity.go), JSON or not.
func CompleteActivity(t *testing.T, c client.Client, id, activityID, result string) {
	t.Helper()
	_, err := c.WorkflowService().RespondActivityTaskCompletedById(context.Background(), &workflowservice.RespondActivityTaskCompletedByIdRequest{
		Namespace: namespaceOf(c), WorkflowId: id, ActivityId: activityID, Identity: toolIdentity,
		Result: &commonpb.Payloads{Payloads: []*commonpb.Payload{{
			Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(result)}}},
	})
	require.NoError(t, err)
}

// FailActivity is `temporal activity fail --activity-id --reason`: the
// CLI sends a non-retryable application failure with no type
// (temporalcli/commands.activity.go), so the step is not retried.
func FailActivity(t *testing.T, c client.Client, id, activityID string, reason error) {
	t.Helper()
	_, err := c.WorkflowService().RespondActivityTaskFailedById(context.Background(), &workflowservice.RespondActivityTaskFailedByIdRequest{
		Namespace: namespaceOf(c), WorkflowId: id, ActivityId: activityID, Identity: toolIdentity,
		Failure: &failurepb.Failure{Message: reason.Error(), Source: "CLI",
			FailureInfo: &failurepb.Failure_ApplicationFailureInfo{ApplicationFailureInfo: &failurepb.ApplicationFailureInfo{NonRetryable: true}}},
	})
	require.NoError(t, err)
}

// LastActivityAttempt is the attempt number of the step of type name in
// workflow id that started last (the one that completed): above 1 when a
// tool ended the attempt that was running.
func LastActivityAttempt(t *testing.T, c client.Client, id, name string) int32 {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]bool{}
	var attempt int32
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == name {
			scheduled[e.GetEventId()] = true
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] {
			attempt = a.GetAttempt()
		}
	}
	require.NotZero(t, attempt, "%s: no %s started", id, name)
	return attempt
}
