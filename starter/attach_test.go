package main

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

type startedJSON struct {
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId"`
	Attached   bool   `json:"attached"`
}

func startJSON(t *testing.T, vars []string, args ...string) (startedJSON, result) {
	t.Helper()
	r := runStarter(t, vars, append(args, "--json")...)
	var s startedJSON
	if r.code == exitOK {
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &s), r.stdout)
	}
	return s, r
}

// Re-running the same agent-install attaches to the running update even
// after the workflow replaced its search attribute's requested image
// ("newest") with the resolved one; a different request under the same
// workflow ID is refused; two starters racing each other start one
// workflow and the other attaches.
func TestAgentInstallRerunAttachesAndRacingStartsStartOne(t *testing.T) {
	env := testenv.New(t)
	s, err := spec.Generate(spec.GenerateOptions{Servers: 3, Seed: 5, SpeedUp: 1})
	require.NoError(t, err)
	sim := env.StartFleetsim(s)
	env.StartWorker(workerapp.Deps{Fleet: env.Endpoints(sim)})
	vars := []string{"TEMPORAL_ADDRESS=" + env.TemporalAddress(), "FLEETSAGA_TASK_QUEUE=" + env.TaskQueue}
	ctx := context.Background()
	t.Cleanup(func() {
		for _, id := range []string{"fleetsaga/agent-install/dc/smartlogin", "fleetsaga/agent-install/dc/amon-agent"} {
			_ = env.Client.TerminateWorkflow(context.Background(), id, "", "test over")
		}
	})

	args := []string{"agent-install", "--agent", "smartlogin", "--all"}
	first, r := startJSON(t, vars, args...)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.False(t, first.Attached)
	// The workflow resolves "newest" and publishes the resolved image.
	require.Eventually(t, func() bool {
		d, err := env.Client.DescribeWorkflowExecution(ctx, first.WorkflowID, "")
		if err != nil {
			return false
		}
		a := keywordAttr(d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[workflows.SAArtifact.GetName()])
		return a != "" && a != "smartlogin@newest"
	}, 60*time.Second, 100*time.Millisecond)

	again, r := startJSON(t, vars, args...)
	require.Equal(t, exitOK, r.code, "the same request attaches: %s", r.stderr)
	require.True(t, again.Attached)
	require.Equal(t, first.RunID, again.RunID)

	other := runStarter(t, vars, append(args, "--concurrency", "2")...)
	require.Equal(t, exitRefused, other.code, other.stderr)
	require.Contains(t, other.stderr, first.WorkflowID)

	// Two starters at once: one starts, the other attaches to it.
	race := []string{"agent-install", "--agent", "amon-agent", "--all"}
	var wg sync.WaitGroup
	out := make([]startedJSON, 2)
	codes := make([]int, 2)
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r result
			out[i], r = startJSON(t, vars, race...)
			codes[i] = r.code
		}()
	}
	wg.Wait()
	require.Equal(t, []int{exitOK, exitOK}, codes)
	require.Equal(t, out[0].RunID, out[1].RunID, "one workflow run")
	require.NotEqual(t, out[0].Attached, out[1].Attached, "exactly one started, the other attached: %+v", out)
}
