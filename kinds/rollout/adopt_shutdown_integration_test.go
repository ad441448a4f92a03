package rollout_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// An adopter's context ends for many reasons; only a cancel of the rollout
// (or of the activity) is passed on to the adopted update, and a
// termination of the rollout (as to its children). A graceful worker
// shutdown, a pause or reset of the activity, a reset of the rollout (its
// old run is gone, the new one adopts the update), heartbeats that failed
// and the deadline leave it running: the adopter is retried, or the
// rollout decides.
func TestAdoptUpdateCancelsItsUpdateOnlyOnARealCancel(t *testing.T) {
	gone := serviceerror.NewNotFound("workflow not found")
	for _, tc := range []struct {
		name    string
		cause   error // nil: the deadline
		rollout enumspb.WorkflowExecutionStatus
		cancel  bool
	}{
		{"the rollout was cancelled", temporal.NewCanceledError(), enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, true},
		{"the rollout was terminated", gone, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, true},
		{"a graceful worker shutdown", worker.ErrWorkerShutdown, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, false},
		{"the activity was paused", activity.ErrActivityPaused, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, false},
		{"the activity was reset", activity.ErrActivityReset, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, false},
		{"the rollout was reset", gone, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, false},
		{"heartbeats failed until their timeout", serviceerror.NewUnavailable("frontend down"), enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, false},
		{"the deadline", nil, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &mocks.Client{}
			c.On("DescribeWorkflowExecution", mock.Anything, "child", "").Return(&workflowservice.DescribeWorkflowExecutionResponse{
				WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
					Execution:       &commonpb.WorkflowExecution{WorkflowId: "child", RunId: "r1"},
					ParentExecution: &commonpb.WorkflowExecution{WorkflowId: "parent"},
					Status:          enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
				}}, nil)
			c.On("DescribeWorkflowExecution", mock.Anything, "parent", "").Return(&workflowservice.DescribeWorkflowExecutionResponse{
				WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Status: tc.rollout}}, nil).Maybe()
			bg, end := context.WithCancelCause(context.Background())
			defer end(nil)
			if tc.cause == nil {
				var stop context.CancelFunc
				bg, stop = context.WithTimeout(bg, 0)
				defer stop()
			}
			run := &mocks.WorkflowRun{}
			run.On("Get", mock.Anything, mock.Anything).Run(func(args mock.Arguments) {
				end(tc.cause) // the context ends while the adopter waits
				<-args.Get(0).(context.Context).Done()
			}).Return(context.Canceled)
			c.On("GetWorkflow", mock.Anything, "child", "r1").Return(run)
			c.On("CancelWorkflow", mock.Anything, "child", "").Return(nil).Maybe()

			var s testsuite.WorkflowTestSuite
			env := s.NewTestActivityEnvironment()
			env.SetWorkerOptions(worker.Options{BackgroundActivityContext: bg})
			env.RegisterActivity(&rollout.RolloutActivities{Temporal: c})
			_, err := env.ExecuteActivity((&rollout.RolloutActivities{}).AdoptUpdate, rollout.AdoptUpdateInput{WorkflowID: "child", Parent: "parent"})
			require.Error(t, err, "the adopter did not see its update end")
			if tc.cancel {
				c.AssertCalled(t, "CancelWorkflow", mock.Anything, "child", "")
			} else {
				c.AssertNotCalled(t, "CancelWorkflow", mock.Anything, "child", "")
			}
		})
	}
}

// adoptFlashBytesPerSecond slows the SP's flash (×100 in fleetsim): 256 KiB
// in about 10 s, long enough for a reset, the adopter's start and a
// worker's graceful restart while the SP still receives the image.
const adoptFlashBytesPerSecond = 256

// An operator resets a rollout to its first workflow task while its SP
// firmware update delivers: the reset run adopts the running update. Then
// the worker running the adopter is restarted gracefully (worker.Stop, as
// at SIGTERM: its activities' context ends with the worker shutdown) and
// a new one takes over. The adopted update is never cancelled: the SP got
// our image once and runs it, the ledger's one attempt completed, and the
// rollout ends with the update completed.
func TestRolloutAdoptedUpdateSurvivesAGracefulWorkerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	const cubby = 13 // this test's: other packages update the low cubbies on the same Temporal server
	s := &spec.Spec{Seed: 21, SpeedUp: 100, Timings: spec.DefaultTimings()}
	s.Timings.FlashBytesPerSecond = adoptFlashBytesPerSecond
	s.Timings.SPResetTime = spec.Duration{Duration: 20 * time.Second}
	s.Racks = spec.GenerateRacks(16, 21)
	require.NoError(t, s.Validate())
	env := testenv.New(t)
	sim := env.StartFleetsim(s)
	stop := startRealWorker(t, env, sim)

	path := filepath.Join(t.TempDir(), "sp-1.1.0.bin")
	sum, err := simmgs.WriteImageFile(path, simmgs.ImageHeader{Component: simmgs.CompSP, Version: "1.1.0"}, 256<<10)
	require.NoError(t, err)
	upd := mgsupdate.SPFirmwareInput{
		SP:       mgsupdate.SPTarget{Type: fmgs.SpTypeSled, Slot: cubby, Serial: s.Racks[0].Sleds[cubby].Serial, Part: spec.GeneratedPart},
		Artifact: mgsupdate.Artifact{Version: "1.1.0", SHA256: sum, Path: path},
		Timing: mgsupdate.MGSTiming{PollInterval: 20 * time.Millisecond, ProgressTimeout: time.Second, TakeoverTimeout: time.Second,
			ResetRetryInterval: 300 * time.Millisecond, NewVersionTimeout: 10 * time.Second,
			AttemptDelay: 100 * time.Millisecond, MaxAttempts: 4, HeartbeatTimeout: 3 * time.Second},
	}
	raw, err := json.Marshal(upd)
	require.NoError(t, err)
	in := rollout.RolloutInput{Name: "restart-" + env.TaskQueue, Stages: []rollout.Stage{{
		Name: "sp", Kind: workflows.KindSPFirmware, Concurrency: 1,
		Updates: []rollout.PlanUpdate{{Target: upd.Target(), Artifact: upd.Artifact.Version, Input: raw}},
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: rollout.RolloutWorkflowID(in.Name), TaskQueue: env.TaskQueue}, rollout.Rollout, in)
	require.NoError(t, err)
	truth := func() simmgs.SPTruth { return sim.Truth()[simmgs.Name].(simmgs.Truth).Racks[0].SPs[cubby] }
	require.Eventually(t, func() bool {
		ds := truth().Deliveries
		return len(ds) > 0 && ds[0].Outcome == "in_progress" && ds[0].Bytes > 0
	}, time.Minute, 10*time.Millisecond, "no delivery started")

	reset := testenv.ResetWorkflow(t, env.Client, run.GetID(), testenv.ResetFirst)
	require.Eventually(t, func() bool { return adopterStarted(ctx, env.Client, reset) }, time.Minute, 20*time.Millisecond,
		"the reset run never adopted the running update")
	require.Equal(t, "in_progress", truth().Deliveries[0].Outcome, "the delivery ended before the restart: nothing tested")
	stop() // graceful: in-flight activities get the stop timeout, then their context ends
	startRealWorker(t, env, sim)

	var res rollout.RolloutResult
	require.NoError(t, reset.Get(ctx, &res))
	require.Len(t, res.Outcomes, 1)
	assert.Equal(t, workflows.StateCompleted, res.Outcomes[0].State, "%+v", res.Outcomes[0])

	tr := truth()
	assert.Equal(t, "1.1.0", tr.SP.Active.Version)
	require.Len(t, tr.Deliveries, 1, "one delivery, never aborted: %+v", tr.Deliveries)
	assert.Equal(t, "complete", tr.Deliveries[0].Outcome)
	spID := workflows.WorkflowID(workflows.KindSPFirmware, upd.Target())
	atts, err := env.Store.Attempts(ctx, spID)
	require.NoError(t, err)
	require.Len(t, atts, 1, "one attempt: %+v", atts)
	assert.Equal(t, ledger.StateCompleted, atts[0].State)
	assert.Equal(t, tr.Deliveries[0].UpdateID, atts[0].ID, "the ledger's attempt is the delivered update")
	assert.False(t, cancelRequested(ctx, t, env.Client, spID),
		"the adopted update got a cancel request")
}

// restartStopTimeout is the stopping worker's WorkerStopTimeout: short, so
// the adopter's context ends with the worker shutdown while its update runs.
const restartStopTimeout = time.Second

// startRealWorker runs the product's worker (workerapp.Run, every workflow
// and activity; unversioned: this package's test kind has no versioning
// behaviour) until stop, which ends it as SIGTERM does: Run's context ends
// and the worker stops gracefully.
func startRealWorker(t *testing.T, env *testenv.Env, sim *fleetsim.Server) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	d := workerapp.Deps{Ledger: env.Store, Fleet: env.Endpoints(sim), HTTP: &http.Client{Timeout: 10 * time.Second}, ArtifactRoot: os.TempDir(),
		Log: env.Log, Identity: "restart-" + uuid.NewString()[:4]}
	go func() {
		done <- workerapp.Run(ctx, env.Client, workerapp.Options{TaskQueue: env.TaskQueue, Identity: d.Identity, StopTimeout: restartStopTimeout}, d)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	return stop
}

// adopterStarted says whether run's AdoptUpdate activity is running on a
// worker.
func adopterStarted(ctx context.Context, c client.Client, run client.WorkflowRun) bool {
	desc, err := c.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
	if err != nil {
		return false
	}
	for _, pa := range desc.GetPendingActivities() {
		if pa.GetActivityType().GetName() == "AdoptUpdate" && pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
			return true
		}
	}
	return false
}

// cancelRequested says whether any run of workflow id was asked to cancel.
func cancelRequested(ctx context.Context, t *testing.T, c client.Client, id string) bool {
	t.Helper()
	iter := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED {
			return true
		}
	}
	return false
}
