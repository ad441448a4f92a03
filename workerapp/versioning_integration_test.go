package workerapp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Every test worker is a Worker Deployment version (testenv's deployment
// of the task queue, this binary's build), made current by StartWorker: a
// rollout of one SP firmware update runs on the real dev server, the
// device update pinned to the build, the rollout auto-upgrading, both on
// that version.
func TestVersionedWorkerPinsDeviceUpdatesAndAutoUpgradesRollouts(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	e := testenv.New(t)
	s, sim := newSim(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.StartWorker(workerapp.Deps{Fleet: e.Endpoints(sim)})

	cubby := 10
	upd := spUpdate(t, s, cubby, mgsupdate.MGSTiming{})
	in := rollout.RolloutInput{Name: "versioned-" + e.TaskQueue, Stages: []rollout.Stage{spStage(t, "sp", false, upd)}}
	id := rollout.RolloutWorkflowID(in.Name)
	run, err := e.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: e.TaskQueue}, rollout.Rollout, in)
	require.NoError(t, err)
	var res rollout.RolloutResult
	require.NoError(t, run.Get(ctx, &res))
	require.Len(t, res.Outcomes, 1)
	require.Equal(t, workflows.StateCompleted, res.Outcomes[0].State)

	requireVersion(ctx, t, e, res.Outcomes[0].WorkflowID, pinned, e.Version.Deployment, e.Version.BuildID)
	requireVersion(ctx, t, e, id, autoUpgrade, e.Version.Deployment, e.Version.BuildID)
}

// docs/DEPLOYING.md on the real dev server: build-2 is deployed and made
// current while a rollout waits for approval and a device update is in
// flight on build-1. The rollout moves to build-2 and runs its next stage
// there; the in-flight device update stays pinned to build-1 and ends
// there (here by a cancel, which runs its abort and ledger write).
func TestNewBuildWhileRolloutInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	e := testenv.New(t)
	s, sim := newSim(t, e)
	deployment := "fleetsaga-" + e.TaskQueue
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	startVersionedWorker(t, e, sim, deployment, "build-1")
	setCurrent(ctx, t, e, deployment, "build-1")

	// A device update held mid-delivery on build-1: the SP stops making
	// progress, and the progress timeout is far away.
	armFault(t, sim, faults.Fault{Kind: faults.SPStuck, Target: "sp/sled/9", AfterPercent: 10})
	held := spUpdate(t, s, 9, mgsupdate.MGSTiming{ProgressTimeout: time.Hour})
	heldID := workflows.WorkflowID(workflows.KindSPFirmware, held.Target()) + "#" + e.TaskQueue
	heldRun, err := e.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: heldID, TaskQueue: e.TaskQueue}, mgsupdate.SPFirmwareUpdate, held)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return phaseOf(ctx, e, heldID) == mgsupdate.MGSPhaseUpdating
	}, 30*time.Second, 100*time.Millisecond, "the held update never started delivering")

	in := rollout.RolloutInput{Name: "new-build-" + e.TaskQueue, Stages: []rollout.Stage{
		spStage(t, "first", false, spUpdate(t, s, 10, mgsupdate.MGSTiming{})),
		spStage(t, "second", true, spUpdate(t, s, 11, mgsupdate.MGSTiming{})),
	}}
	id := rollout.RolloutWorkflowID(in.Name)
	run, err := e.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: e.TaskQueue}, rollout.Rollout, in)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return phaseOf(ctx, e, id) == workflows.PhaseAwaitingApproval
	}, 30*time.Second, 100*time.Millisecond, "the rollout never reached its approval")

	// Deploy build-2 beside build-1 and make it current.
	startVersionedWorker(t, e, sim, deployment, "build-2")
	setCurrent(ctx, t, e, deployment, "build-2")

	var gate *rollout.StagePlan
	require.Eventually(t, func() bool {
		v, err := e.Client.QueryWorkflow(ctx, id, "", rollout.GatePlanQuery)
		return err == nil && v.Get(&gate) == nil && gate != nil
	}, 30*time.Second, 100*time.Millisecond, "the rollout never showed its gate's plan")
	h, err := e.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
		Args:         []any{workflows.Approval{By: "test", Reason: "build-2 deployed", Stage: gate.Stage, PlanDigest: gate.Digest}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(ctx, nil))
	var res rollout.RolloutResult
	require.NoError(t, run.Get(ctx, &res))
	require.Len(t, res.Outcomes, 2)
	for _, o := range res.Outcomes {
		require.Equal(t, workflows.StateCompleted, o.State, o.Target)
	}

	// The held update ends on build-1: its cancellation (abort, ledger)
	// runs there.
	require.NoError(t, e.Client.CancelWorkflow(ctx, heldID, ""))
	var canceled *temporal.CanceledError
	require.ErrorAs(t, heldRun.Get(ctx, nil), &canceled)
	atts, err := e.Store.Attempts(ctx, heldID)
	require.NoError(t, err)
	require.NotEmpty(t, atts)
	for _, a := range atts {
		require.Equal(t, ledger.StateCancelled, a.State, "attempt %d", a.Attempt)
	}

	requireVersion(ctx, t, e, heldID, pinned, deployment, "build-1")
	requireVersion(ctx, t, e, res.Outcomes[0].WorkflowID, pinned, deployment, "build-1")
	requireVersion(ctx, t, e, res.Outcomes[1].WorkflowID, pinned, deployment, "build-2")
	requireVersion(ctx, t, e, id, autoUpgrade, deployment, "build-2")
}

func armFault(t *testing.T, sim *fleetsim.Server, f faults.Fault) {
	t.Helper()
	b, err := json.Marshal(f)
	require.NoError(t, err)
	resp, err := http.Post(sim.URL+"/faults", "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
}

// phaseOf is a workflow's phase from its progress query ("" until it answers).
func phaseOf(ctx context.Context, e *testenv.Env, workflowID string) workflows.Phase {
	v, err := e.Client.QueryWorkflow(ctx, workflowID, "", workflows.ProgressQuery)
	var p workflows.Progress
	if err != nil || v.Get(&p) != nil {
		return ""
	}
	return p.Phase
}

const (
	pinned      = enumspb.VERSIONING_BEHAVIOR_PINNED
	autoUpgrade = enumspb.VERSIONING_BEHAVIOR_AUTO_UPGRADE
)

func newSim(t *testing.T, e *testenv.Env) (*spec.Spec, *fleetsim.Server) {
	s := &spec.Spec{Seed: 7, SpeedUp: 100, Timings: spec.DefaultTimings()}
	s.Timings.FlashBytesPerSecond = 10 << 10
	s.Timings.SPResetTime = spec.Duration{Duration: 20 * time.Second}
	// Sleds 9-11 are this package's: tests of other packages run their
	// SP updates on the same Temporal server at once, under the same
	// workflow IDs (sp/sled/N), on the low cubbies.
	s.Racks = spec.GenerateRacks(16, 7)
	require.NoError(t, s.Validate())
	return s, e.StartFleetsim(s)
}

// startVersionedWorker runs the worker as version deployment/build until
// the test ends.
func startVersionedWorker(t *testing.T, e *testenv.Env, sim *fleetsim.Server, deployment, build string) {
	t.Helper()
	startStoppableWorker(t, e, sim, deployment, build)
}

// setCurrent makes a version current, as an operator does with `temporal
// worker deployment set-current-version`.
func setCurrent(ctx context.Context, t *testing.T, e *testenv.Env, deployment, build string) {
	t.Helper()
	require.NoError(t, devstack.MakeCurrent(ctx, e.Client, devstack.WorkerVersion{Deployment: deployment, BuildID: build}))
}

// spUpdate is an SP firmware update of a sled to 1.1.0.
func spUpdate(t *testing.T, s *spec.Spec, cubby int, timing mgsupdate.MGSTiming) mgsupdate.SPFirmwareInput {
	path := filepath.Join(t.TempDir(), "sp-1.1.0.bin")
	sum, err := simmgs.WriteImageFile(path, simmgs.ImageHeader{Component: simmgs.CompSP, Version: "1.1.0"}, 64<<10)
	require.NoError(t, err)
	timing.PollInterval, timing.ResetRetryInterval = 20*time.Millisecond, 300*time.Millisecond
	timing.NewVersionTimeout, timing.AttemptDelay, timing.HeartbeatTimeout = 10*time.Second, 100*time.Millisecond, 3*time.Second
	return mgsupdate.SPFirmwareInput{
		SP:       mgsupdate.SPTarget{Type: fmgs.SpTypeSled, Slot: uint16(cubby), Serial: s.Racks[0].Sleds[cubby].Serial, Part: spec.GeneratedPart},
		Artifact: mgsupdate.Artifact{Version: "1.1.0", SHA256: sum, Path: path},
		Timing:   timing,
	}
}

func spStage(t *testing.T, name string, approval bool, upd mgsupdate.SPFirmwareInput) rollout.Stage {
	raw, err := json.Marshal(upd)
	require.NoError(t, err)
	return rollout.Stage{Name: name, Kind: workflows.KindSPFirmware, Concurrency: 1, Approval: approval,
		Updates: []rollout.PlanUpdate{{Target: upd.Target(), Artifact: upd.Artifact.Version, Input: raw}}}
}

// requireVersion checks a workflow's versioning behaviour and the version
// it is (or was, when it ended) on.
func requireVersion(ctx context.Context, t *testing.T, e *testenv.Env, workflowID string, want enumspb.VersioningBehavior, deployment, build string) {
	t.Helper()
	d, err := e.Client.DescribeWorkflowExecution(ctx, workflowID, "")
	require.NoError(t, err)
	vi := d.GetWorkflowExecutionInfo().GetVersioningInfo()
	require.NotNil(t, vi, "%s has no versioning info", workflowID)
	require.Equal(t, want, vi.GetBehavior(), workflowID)
	require.Equal(t, deployment, vi.GetDeploymentVersion().GetDeploymentName(), workflowID)
	require.Equal(t, build, vi.GetDeploymentVersion().GetBuildId(), workflowID)
}
