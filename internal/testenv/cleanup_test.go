package testenv_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
)

// A test that fails (or forgets) while its workflow runs leaves that
// workflow on a task queue nobody polls. Workflow IDs name their targets,
// so the next test's start of the same ID would attach to it and wait in
// vain: the stack's cleanup terminates what its test left open.
func TestCleanupTerminatesTheTestsOpenWorkflows(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: Temporal")
	}
	id := "testenv-cleanup-" + t.Name()
	var run string
	t.Run("leaves a workflow running", func(t *testing.T) {
		env := testenv.New(t)
		r, err := env.Client.ExecuteWorkflow(context.Background(),
			client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, "NoWorkerPollsThis")
		require.NoError(t, err)
		run = r.GetRunID()
	})
	env := testenv.New(t)
	desc, err := env.Client.DescribeWorkflowExecution(context.Background(), id, run)
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, desc.GetWorkflowExecutionInfo().GetStatus())
}
