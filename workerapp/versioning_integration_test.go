package workerapp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// A versioned worker (deployment name + build ID), made the deployment's
// current version, runs a rollout of one SP firmware update on the real
// dev server: the device update is pinned to the build, the rollout
// auto-upgrades, and both ran on that version.
func TestVersionedWorkerPinsDeviceUpdatesAndAutoUpgradesRollouts(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	s := &spec.Spec{Seed: 7, SpeedUp: 100, Timings: spec.DefaultTimings()}
	s.Timings.FlashBytesPerSecond = 10 << 10
	s.Timings.SPResetTime = spec.Duration{Duration: 20 * time.Second}
	s.Racks = spec.GenerateRacks(4, 7)
	require.NoError(t, s.Validate())
	e := testenv.New(t)
	sim := e.StartFleetsim(s)

	deployment, build := "fleetsaga-"+e.TaskQueue, "build-1"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	wctx, stopWorker := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- workerapp.Run(wctx, e.Client, workerapp.Options{
			TaskQueue: e.TaskQueue, Identity: "versioned-worker", StopTimeout: time.Second,
			DeploymentName: deployment, BuildID: build,
		}, workerapp.Deps{Ledger: e.Store, Fleet: e.Endpoints(sim), HTTP: &http.Client{Timeout: 10 * time.Second},
			Log: e.Log, Identity: "versioned-worker"})
	}()
	t.Cleanup(func() {
		stopWorker()
		require.NoError(t, <-done)
	})

	// The version exists once the worker has polled; then it is made
	// current, as an operator does with `temporal worker deployment
	// set-current-version`.
	h := e.Client.WorkerDeploymentClient().GetHandle(deployment)
	var setErr error
	require.Eventually(t, func() bool {
		_, setErr = h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: build})
		return setErr == nil
	}, 30*time.Second, 250*time.Millisecond, "set current version: %v", setErr)

	cubby := 2
	path := filepath.Join(t.TempDir(), "sp-1.1.0.bin")
	sum, err := simmgs.WriteImageFile(path, simmgs.ImageHeader{Component: simmgs.CompSP, Version: "1.1.0"}, 64<<10)
	require.NoError(t, err)
	upd := workflows.SPFirmwareInput{
		SP:       workflows.SPTarget{Type: fmgs.SpTypeSled, Slot: uint16(cubby), Serial: s.Racks[0].Sleds[cubby].Serial, Part: spec.GeneratedPart},
		Artifact: workflows.Artifact{Version: "1.1.0", SHA256: sum, Path: path},
		Timing: workflows.MGSTiming{PollInterval: 20 * time.Millisecond, ResetRetryInterval: 300 * time.Millisecond,
			NewVersionTimeout: 10 * time.Second, AttemptDelay: 100 * time.Millisecond, HeartbeatTimeout: 3 * time.Second},
	}
	raw, err := json.Marshal(upd)
	require.NoError(t, err)
	in := workflows.RolloutInput{Name: "versioned-" + e.TaskQueue, Stages: []workflows.Stage{{
		Name: "sp", Kind: workflows.KindSPFirmware, Concurrency: 1,
		Updates: []workflows.PlanUpdate{{Target: upd.Target(), Artifact: "1.1.0", Input: raw}},
	}}}
	id := workflows.RolloutWorkflowID(in.Name)
	run, err := e.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: e.TaskQueue}, workflows.Rollout, in)
	require.NoError(t, err)
	var res workflows.RolloutResult
	require.NoError(t, run.Get(ctx, &res))
	require.Len(t, res.Outcomes, 1)
	require.Equal(t, workflows.StateCompleted, res.Outcomes[0].State)

	for _, c := range []struct {
		workflowID string
		want       enumspb.VersioningBehavior
	}{
		{res.Outcomes[0].WorkflowID, enumspb.VERSIONING_BEHAVIOR_PINNED},
		{id, enumspb.VERSIONING_BEHAVIOR_AUTO_UPGRADE},
	} {
		d, err := e.Client.DescribeWorkflowExecution(ctx, c.workflowID, "")
		require.NoError(t, err)
		vi := d.GetWorkflowExecutionInfo().GetVersioningInfo()
		require.NotNil(t, vi, "%s has no versioning info", c.workflowID)
		require.Equal(t, c.want, vi.GetBehavior(), c.workflowID)
		require.Equal(t, deployment, vi.GetDeploymentVersion().GetDeploymentName(), c.workflowID)
		require.Equal(t, build, vi.GetDeploymentVersion().GetBuildId(), c.workflowID)
	}
}
