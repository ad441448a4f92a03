package workerapp_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/workerapp"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// fixed is the "deploy": false runs the buggy build of stepTwo.
var fixed bool

// panicked counts stepTwo's panics (one per try of its workflow task).
var panicked atomic.Int32

func stepTwo(ctx workflow.Context) (string, error) {
	if err := workflow.Sleep(ctx, time.Millisecond); err != nil {
		return "", err
	}
	if !fixed {
		panicked.Add(1)
		var m map[string]int
		m["boom"]++ // a bug: nil map write panics
	}
	return "resumed", nil
}

// A workflow task that panics blocks its workflow (it does not fail it)
// and is visible: an error log and fleetsaga_workflow_panics_total on the
// worker's /metrics. A worker with the fix resumes the workflow.
func TestWorkflowPanicBlocksVisiblyAndAFixedWorkerResumes(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	m, err := workerapp.NewMetrics()
	require.NoError(t, err)
	addr, closeMetrics, err := m.Serve("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = closeMetrics() })

	start := func() func() {
		w, err := workerapp.NewWorker(env.Client, workerapp.Options{TaskQueue: env.TaskQueue, Metrics: m, StopTimeout: time.Second},
			workerapp.Deps{Ledger: env.Store, Log: env.Log, HTTP: http.DefaultClient})
		require.NoError(t, err)
		w.RegisterWorkflow(stepTwo)
		require.NoError(t, w.Start())
		return w.Stop
	}
	stop := start()
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: env.TaskQueue, WorkflowTaskTimeout: 2 * time.Second}, stepTwo)
	require.NoError(t, err)

	require.Eventually(t, func() bool {
		return panicsCounted(t, addr) >= 1
	}, 30*time.Second, 100*time.Millisecond, "the panic is counted on /metrics")
	d, err := env.Client.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus(), "blocked, not failed")

	stop()
	require.EqualValues(t, panicked.Load(), panicsTotal(t, addr), "each panic counts once")
	fixed = true
	t.Cleanup(func() { fixed = false })
	defer start()()
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var out string
	require.NoError(t, run.Get(wctx, &out))
	require.Equal(t, "resumed", out)
}

func panicsCounted(t *testing.T, addr string) int {
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, `fleetsaga_workflow_panics_total{workflow_type="stepTwo"}`) {
			f := strings.Fields(line)
			if f[len(f)-1] != "0" {
				return 1
			}
		}
	}
	return 0
}

// panicsTotal is stepTwo's fleetsaga_workflow_panics_total.
func panicsTotal(t *testing.T, addr string) float64 {
	return metric(t, addr, `fleetsaga_workflow_panics_total{workflow_type="stepTwo"}`)
}
