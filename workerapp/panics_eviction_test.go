package workerapp_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/workerapp"
)

// endingHeld is released by the test; until then every endingBlocked
// workflow waits in its ending.
var (
	endingHeld    = make(chan struct{})
	endingStarted atomic.Int32
	// unwound counts endings left without their activity's result: the
	// SDK unwinding an evicted workflow's coroutine.
	unwound atomic.Int32
)

func holdEnding(ctx context.Context) error {
	endingStarted.Add(1)
	select {
	case <-endingHeld:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// endingBlocked waits the way the lifecycle's ending does
// (workflows/lifecycle.go end): an activity on a disconnected context
// whose cancel is deferred.
func endingBlocked(ctx workflow.Context) error {
	finished := false
	defer func() {
		if !finished {
			unwound.Add(1)
		}
	}()
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	dctx = workflow.WithActivityOptions(dctx, workflow.ActivityOptions{StartToCloseTimeout: time.Hour})
	err := workflow.ExecuteActivity(dctx, "holdEnding").Get(dctx, nil)
	finished = true
	return err
}

// evictionCacheSize makes every new workflow push the previous one out of
// the worker's cache (the SDK's cache holds one less than its size).
const evictionCacheSize = 2

// defaultCacheSize is the SDK's, restored for the package's other tests.
const defaultCacheSize = 10000

// The SDK evicts a cached workflow by unwinding its coroutine outside the
// workflow: the deferred cancel of a disconnected context then panics
// "getState: illegal access from outside of workflow context". That is no
// workflow panic: nothing is blocked, the workflow resumes from its
// history. fleetsaga_workflow_panics_total and the error log stay silent;
// a real panic still counts (TestWorkflowPanicBlocksVisiblyAndAFixedWorkerResumes).
func TestEvictedWorkflowsAreNotCountedAsPanics(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	// Process-global, read when the first live worker starts: the other
	// tests' workers have stopped by now.
	worker.SetStickyWorkflowCacheSize(evictionCacheSize)
	t.Cleanup(func() { worker.SetStickyWorkflowCacheSize(defaultCacheSize) })

	m, err := workerapp.NewMetrics()
	require.NoError(t, err)
	addr, closeMetrics, err := m.Serve("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = closeMetrics() })
	// A client of its own, so that the SDK's eviction count is on /metrics.
	c, err := client.Dial(client.Options{HostPort: env.TemporalAddress(), Namespace: "default", MetricsHandler: m.SDK})
	require.NoError(t, err)
	t.Cleanup(c.Close)

	var logs syncBuffer
	w, err := workerapp.NewWorker(c, workerapp.Options{TaskQueue: env.TaskQueue, Metrics: m, StopTimeout: time.Second},
		workerapp.Deps{Ledger: env.Store, Log: zerolog.New(&logs), HTTP: http.DefaultClient})
	require.NoError(t, err)
	w.RegisterWorkflow(endingBlocked)
	w.RegisterActivityWithOptions(holdEnding, activity.RegisterOptions{Name: "holdEnding"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	const n = 5
	var runs []client.WorkflowRun
	for i := 0; i < n; i++ {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: env.TaskQueue}, endingBlocked)
		require.NoError(t, err)
		runs = append(runs, run)
		// One at a time, so that each pushes the previous out of the cache.
		require.Eventually(t, func() bool { return endingStarted.Load() == int32(i+1) }, 30*time.Second, 20*time.Millisecond)
	}
	require.Eventually(t, func() bool {
		return metric(t, addr, "temporal_sticky_cache_forced_eviction_total") >= n-1 && unwound.Load() >= n-1
	}, 30*time.Second, 50*time.Millisecond, "the SDK evicted the blocked workflows and unwound them: %v evictions, %d unwound",
		metric(t, addr, "temporal_sticky_cache_forced_eviction_total"), unwound.Load())

	close(endingHeld)
	for _, run := range runs {
		require.NoError(t, run.Get(ctx, nil), "an evicted workflow resumes from its history")
	}
	require.Zero(t, metric(t, addr, `fleetsaga_workflow_panics_total{workflow_type="endingBlocked"}`), "evictions are not panics")
	require.NotContains(t, logs.String(), "workflow task panicked")
}

// metric is the value of the first sample on /metrics whose name (and
// labels) start with prefix, or 0 when there is none.
func metric(t *testing.T, addr, prefix string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, prefix) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			require.NoError(t, err)
			return v
		}
	}
	return 0
}

// syncBuffer is a log sink the worker's goroutines may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
