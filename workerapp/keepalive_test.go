package workerapp_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/workerapp"
)

// keepAliveBeat is what longRequest beat before its one long call; a retry
// would see it.
const keepAliveBeat = "before the long request"

// longRequest beats once, then makes one call that lasts three heartbeat
// timeouts without beating (an MGS request waiting 60 s for its SP), and
// reports its attempt and the details a retry found.
func longRequest(ctx context.Context, hold time.Duration) (string, error) {
	info := activity.GetInfo(ctx)
	if info.Attempt > 1 {
		var prev string
		_ = activity.GetHeartbeatDetails(ctx, &prev)
		return "", temporal.NewNonRetryableApplicationError("timed out on a live worker; details kept: "+prev, "Retried", nil)
	}
	activity.RecordHeartbeat(ctx, keepAliveBeat)
	select {
	case <-time.After(hold):
		return "done on the first attempt", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func oneLongRequest(ctx workflow.Context, heartbeat time.Duration) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute, HeartbeatTimeout: heartbeat,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 2, InitialInterval: time.Millisecond},
	})
	var out string
	err := workflow.ExecuteActivity(ctx, "longRequest", 3*heartbeat).Get(ctx, &out)
	return out, err
}

// A device step's one request may outlast the heartbeat timeout (MGS waits
// up to 60 s for an SP); the worker keeps the step's heartbeat going while
// it is alive, so the step is not retried under a live worker (it was, with
// the heartbeat timeout raised to 90 s to make room instead).
func TestALongRequestOnALiveWorkerIsNotTakenForADeadWorker(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	w, err := workerapp.NewWorker(env.Client, workerapp.Options{TaskQueue: env.TaskQueue, StopTimeout: time.Second},
		workerapp.Deps{Ledger: env.Store, Log: zerolog.Nop(), HTTP: http.DefaultClient})
	require.NoError(t, err)
	w.RegisterWorkflow(oneLongRequest)
	w.RegisterActivityWithOptions(longRequest, activity.RegisterOptions{Name: "longRequest"})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: env.TaskQueue}, oneLongRequest, 3*time.Second)
	require.NoError(t, err)
	var out string
	require.NoError(t, run.Get(ctx, &out), "the step ran on a live worker: no heartbeat timeout")
	require.Equal(t, "done on the first attempt", out)
}
