package workerapp_test

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// An operator moves a running, pinned SP update to another build of the
// same code (`temporal workflow update-options --versioning-override-
// behavior pinned --versioning-override-deployment-name D
// --versioning-override-build-id build-2`), then stops build-1's worker.
// The update goes on under build-2: its next tasks replay there, and its
// cancel (the abort at the SP, the ledger's end) runs there.
func TestVersioningOverrideMovesAPinnedUpdateToAnotherBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	e := testenv.New(t)
	s, sim := newSim(t, e)
	deployment := "fleetsaga-" + e.TaskQueue
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stopBuild1 := startStoppableWorker(t, e, sim, deployment, "build-1")
	setCurrent(ctx, t, e, deployment, "build-1")

	armFault(t, sim, faults.Fault{Kind: faults.SPStuck, Target: "sp/sled/12", AfterPercent: 10})
	held := spUpdate(t, s, 12, mgsupdate.MGSTiming{ProgressTimeout: time.Hour})
	id := workflows.WorkflowID(workflows.KindSPFirmware, held.Target()) + "#" + e.TaskQueue
	run, err := e.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: e.TaskQueue}, mgsupdate.SPFirmwareUpdate, held)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return phaseOf(ctx, e, id) == mgsupdate.MGSPhaseUpdating },
		30*time.Second, 100*time.Millisecond, "the update never started delivering")
	requireVersion(ctx, t, e, id, pinned, deployment, "build-1")

	// build-2 polls beside build-1 without being made current: only the
	// override sends the update there.
	startVersionedWorker(t, e, sim, deployment, "build-2")
	require.Eventually(t, func() bool {
		_, err := e.Client.UpdateWorkflowExecutionOptions(ctx, client.UpdateWorkflowExecutionOptionsRequest{
			WorkflowId: id, RunId: run.GetRunID(),
			WorkflowExecutionOptionsChanges: client.WorkflowExecutionOptionsChanges{VersioningOverride: &client.VersioningOverrideChange{
				Value: &client.PinnedVersioningOverride{Version: worker.WorkerDeploymentVersion{DeploymentName: deployment, BuildID: "build-2"}}}},
		})
		return err == nil // the version exists once its worker polled
	}, 30*time.Second, 200*time.Millisecond, "the override to build-2 was refused")
	stopBuild1()

	require.NoError(t, e.Client.CancelWorkflow(ctx, id, ""))
	var canceled *temporal.CanceledError
	require.ErrorAs(t, run.Get(ctx, nil), &canceled, "build-2 ran the cancel")
	atts, err := e.Store.Attempts(ctx, id)
	require.NoError(t, err)
	require.NotEmpty(t, atts)
	for _, a := range atts {
		require.Equal(t, ledger.StateCancelled, a.State, "attempt %d", a.Attempt)
	}
	requireVersion(ctx, t, e, id, pinned, deployment, "build-2")
	sp := sim.Truth()[simmgs.Name].(simmgs.Truth).Racks[0].SPs[12]
	require.Len(t, sp.Deliveries, 1, "one delivery, not a second one from build-2: %+v", sp.Deliveries)
	require.Equal(t, "aborted", sp.Deliveries[0].Outcome, "the cancel's abort reached the SP")
	require.Equal(t, "1.0.0", sp.SP.Active.Version, "the SP still runs its old image")
}

// startStoppableWorker runs the worker as version deployment/build until
// the returned stop is called (or the test ends).
func startStoppableWorker(t *testing.T, e *testenv.Env, sim *fleetsim.Server, deployment, build string) (stop func()) {
	t.Helper()
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	identity := "worker-" + build
	go func() {
		done <- workerapp.Run(wctx, e.Client, workerapp.Options{
			TaskQueue: e.TaskQueue, Identity: identity, StopTimeout: time.Second,
			DeploymentName: deployment, BuildID: build,
		}, workerapp.Deps{Ledger: e.Store, Fleet: e.Endpoints(sim), HTTP: &http.Client{Timeout: 10 * time.Second}, ArtifactRoot: os.TempDir(),
			Log: e.Log, Identity: identity})
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(stop)
	return stop
}
