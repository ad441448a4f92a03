package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// cleanupTimeout bounds finding and terminating a test's open workflows
// (a few calls on the dev server; a loaded one is slower).
const cleanupTimeout = 30 * time.Second

// terminateOpen ends every workflow the test left running on its task
// queue. Nobody polls that queue once the test's workers stop, and
// workflow IDs name their targets: a later test starting the same ID
// would get this run's handle and wait for it forever, so one failure
// would fail every test after it.
func terminateOpen(t testing.TB, c client.Client, queue string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	query := fmt.Sprintf("TaskQueue = %q AND ExecutionStatus = 'Running'", queue)
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token})
		if err != nil {
			t.Logf("testenv: list the test's open workflows: %v", err)
			return
		}
		for _, ex := range resp.GetExecutions() {
			id, run := ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId()
			if err := c.TerminateWorkflow(ctx, id, run, "testenv: the test ended with it running"); err != nil {
				t.Logf("testenv: terminate %s: %v", id, err)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return
		}
	}
}
