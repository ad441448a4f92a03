package bootimage_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	simapi "github.com/fleetsaga/fleetsaga/fleetsim/machineapi"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/bootimage"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// speedUp makes MachineBootTime (4 min) take 200 ms.
const speedUp = 1200

type bumpEnv struct {
	*testenv.Env
	sim *fleetsim.Server
}

func setup(t *testing.T, clusters ...spec.Cluster) *bumpEnv {
	t.Helper()
	env := testenv.New(t)
	s := &spec.Spec{Seed: 1, SpeedUp: speedUp, Timings: spec.DefaultTimings(), Clusters: clusters}
	require.NoError(t, s.Validate())
	return &bumpEnv{Env: env, sim: env.StartFleetsim(s)}
}

// unmanaged turns the cluster's MCO (on by default) off: no operator owns
// its MachineSets, so the bump patches the opted-in ones itself.
func unmanaged(c spec.Cluster) spec.Cluster {
	c.MCO = spec.Off()
	return c
}

func (e *bumpEnv) worker() (stop func()) {
	return e.StartWorker(workerapp.Deps{Fleet: e.Endpoints(e.sim)})
}

func (e *bumpEnv) arm(f faults.Fault) {
	_, err := e.sim.Env.Faults.Arm(f)
	require.NoError(e.T, err)
}

func (e *bumpEnv) truth() simapi.ClusterTruth {
	resp, err := http.Get(e.sim.URL + "/truth/machineapi")
	require.NoError(e.T, err)
	defer resp.Body.Close()
	var tr simapi.Truth
	require.NoError(e.T, json.NewDecoder(resp.Body).Decode(&tr))
	return tr.Clusters["c1"]
}

func fastInput() bootimage.BootImageBumpInput {
	return bootimage.BootImageBumpInput{
		Cluster:        "c1",
		SettleInterval: 300 * time.Millisecond,
		PollInterval:   100 * time.Millisecond,
	}
}

func (e *bumpEnv) start(in bootimage.BootImageBumpInput) client.WorkflowRun {
	e.T.Helper()
	run, err := e.Client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID:                    bootimage.BootImageBumpWorkflowID(in.Cluster),
		TaskQueue:             e.TaskQueue,
		TypedSearchAttributes: workflows.StartAttributes(workflows.KindBootImageBump, in.Target(), in.ArtifactVersion()),
	}, bootimage.BootImageBump, in)
	require.NoError(e.T, err)
	return run
}

// wait returns the result, also when the workflow failed (from the error's details).
func (e *bumpEnv) wait(run client.WorkflowRun) (bootimage.BootImageBumpResult, error) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var res bootimage.BootImageBumpResult
	err := run.Get(ctx, &res)
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.HasDetails() {
		require.NoError(e.T, app.Details(&res))
	}
	return res, err
}

func (e *bumpEnv) attempt(run client.WorkflowRun) ledger.Attempt {
	e.T.Helper()
	as, err := e.Store.Attempts(context.Background(), run.GetID())
	require.NoError(e.T, err)
	require.Len(e.T, as, 1)
	return as[0]
}

var golden = spec.SampleBootImages()[2]
var install = spec.SampleBootImages()[0]

// Happy path: waits for the upgrade to finish and the golden record to be
// stamped, patches both MachineSets, proves the image with a canary that
// joins and goes away again, records the boot image version.
func TestBumpHappyPathWithCanary(t *testing.T) {
	c := unmanaged(spec.SampleCluster("c1", spec.PlatformAWS, false))
	c.Upgrading = true
	// Long enough that a loaded machine still starts the bump before the
	// upgrade ends (0.5 s flaked under make test's load).
	c.UpgradeCompletesAfter = spec.Duration{Duration: 60 * time.Minute} // 3 s
	c.GoldenStampedRelease = spec.SampleMidRelease
	c.GoldenStampAfter = spec.Duration{Duration: 80 * time.Minute} // 4 s
	e := setup(t, c)
	e.worker()
	in := fastInput()
	in.Release = spec.SampleCurrentRelease
	in.Canary = &bootimage.BootImageCanary{MachineSet: "c1-worker-a", Timeout: time.Minute}
	run := e.start(in)
	res, err := e.wait(run)
	require.NoError(t, err, "%+v", res)

	assert.Equal(t, "Reconciled", res.Outcome)
	assert.Equal(t, []string{"c1-worker-a", "c1-worker-b"}, res.Patched)
	assert.NotEmpty(t, res.Waited, "it waited for the upgrade and the golden record")
	require.NotNil(t, res.Canary)
	assert.True(t, res.Canary.Joined, "%+v", res.Canary)

	tr := e.truth()
	for _, ms := range []string{"c1-worker-a", "c1-worker-b"} {
		assert.Equal(t, golden.Images["amd64"].AWS["us-east-1"], tr.MachineSets[ms].Image, ms)
		assert.Equal(t, 1, tr.MachineSets[ms].ImagePatches, ms)
	}
	a := tr.MachineSets["c1-worker-a"]
	assert.Equal(t, int64(1), a.Replicas, "the canary was scaled back down")
	require.Len(t, a.Machines, 1)
	assert.Equal(t, install.Images["amd64"].AWS["us-east-1"], a.Machines[0].Image, "the original machine stays")
	// The record and Upgradeable are the machine-config operator's: untouched.
	assert.Equal(t, spec.SampleInstallRelease, tr.BootImage.OCPVersion)
	assert.Equal(t, simapi.Condition{Status: "True", Reason: "AsExpected"}, tr.Upgradeable)

	at := e.attempt(run)
	assert.Equal(t, ledger.StateCompleted, at.State)
	assert.Equal(t, "cluster/c1", at.Target)
	evs, err := e.Store.Events(context.Background(), at.ID)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(evs), 6, "intent, preconditions, plan, patches, canary, record, skew, finish")
	replay.Record(t, e.Client, run.GetID(), run.GetRunID(), "../testdata/histories/bootimage-happy-canary.json")
}

// The cluster's MachineConfiguration opts in only pool=a (Partial): only
// that MachineSet is patched, whatever the input says, and the operator's
// status (boot image record, Upgradeable) stays as it was.
func TestBumpOptInFromMachineConfiguration(t *testing.T) {
	c := unmanaged(spec.SampleCluster("c1", spec.PlatformAWS, false))
	c.ManagedBootImages = &spec.BootImageOptIn{Mode: "Partial", MatchLabels: map[string]string{"fleetsaga.io/pool": "a"}}
	off := unmanaged(spec.SampleCluster("c2", spec.PlatformAWS, false))
	off.ManagedBootImages = &spec.BootImageOptIn{Mode: "None"}
	e := setup(t, c, off)
	e.worker()
	before := e.truth()
	in := fastInput()
	in.Selection = bootimage.SelectAll // an old input field: the cluster decides
	run := e.start(in)
	res, err := e.wait(run)
	require.NoError(t, err, "%+v", res)
	assert.Equal(t, []string{"c1-worker-a"}, res.Patched)
	require.NotNil(t, res.OptIn)
	assert.Equal(t, "Partial", res.OptIn.Mode)
	tr := e.truth()
	assert.Equal(t, golden.Images["amd64"].AWS["us-east-1"], tr.MachineSets["c1-worker-a"].Image)
	assert.Equal(t, before.MachineSets["c1-worker-b"].Image, tr.MachineSets["c1-worker-b"].Image, "not opted in")
	assert.Zero(t, tr.MachineSets["c1-worker-b"].ImagePatches)
	assert.Equal(t, before.BootImage, tr.BootImage, "the boot image record is the operator's")
	assert.Equal(t, before.Upgradeable, tr.Upgradeable, "the Upgradeable condition is the operator's")
	replay.Record(t, e.Client, run.GetID(), run.GetRunID(), "../testdata/histories/bootimage-optin-partial.json")

	// Opted out: nothing is patched.
	in.Cluster = "c2"
	res, err = e.wait(e.start(in))
	require.NoError(t, err, "%+v", res)
	assert.Equal(t, "NothingSelected", res.Outcome)
	assert.Empty(t, res.Patched)
}

// Another actor reverts one MachineSet after every patch: the hot-loop guard
// stops after 3 patches and reports it; nothing is recorded.
func TestBumpRevertingActor(t *testing.T) {
	e := setup(t, unmanaged(spec.SampleCluster("c1", spec.PlatformGCP, false)))
	e.arm(faults.Fault{Kind: faults.MachineSetRevert, Target: "machineset/c1/c1-worker-b"})
	e.worker()
	run := e.start(fastInput())
	res, err := e.wait(run)
	require.Error(t, err)
	assert.Equal(t, "Failed", res.Outcome)
	assert.Equal(t, []string{"c1-worker-b"}, res.HotLoop)
	assert.Equal(t, []string{"c1-worker-a"}, res.Patched)

	tr := e.truth()
	b := tr.MachineSets["c1-worker-b"]
	assert.Equal(t, 3, b.ImagePatches, "stopped after the same patch was applied 3 times")
	assert.Equal(t, 3, b.Reverts)
	assert.Equal(t, "projects/rhcos-cloud/global/images/"+install.Images["amd64"].GCP.Name, b.Image)
	assert.Equal(t, "projects/rhcos-cloud/global/images/"+golden.Images["amd64"].GCP.Name, tr.MachineSets["c1-worker-a"].Image)
	assert.Equal(t, spec.SampleInstallRelease, tr.BootImage.OCPVersion, "record unchanged")
	assert.Equal(t, ledger.StateFailed, e.attempt(run).State)
}

// Patch conflicts are retried on a fresh read.
func TestBumpPatchConflict(t *testing.T) {
	e := setup(t, unmanaged(spec.SampleCluster("c1", spec.PlatformGCP, false)))
	e.arm(faults.Fault{Kind: faults.PatchConflict, Target: "machineset/c1/c1-worker-a", Times: 3})
	e.worker()
	res, err := e.wait(e.start(fastInput()))
	require.NoError(t, err, "%+v", res)
	assert.Equal(t, "Reconciled", res.Outcome)
	tr := e.truth()
	a := tr.MachineSets["c1-worker-a"]
	assert.Equal(t, 3, a.Conflicts)
	assert.Equal(t, 1, a.ImagePatches)
	assert.Equal(t, "projects/rhcos-cloud/global/images/"+golden.Images["amd64"].GCP.Name, a.Image)
}

// A canary that never joins rolls back every MachineSet patched in this run
// and scales the canary back down.
func TestBumpCanaryFailureRollsBack(t *testing.T) {
	e := setup(t, unmanaged(spec.SampleCluster("c1", spec.PlatformAzure, true)))
	e.arm(faults.Fault{Kind: faults.MachineBootFailure, Target: "machineset/c1/c1-worker-a"})
	e.worker()
	in := fastInput()
	in.Canary = &bootimage.BootImageCanary{MachineSet: "c1-worker-a", Timeout: 3 * time.Second}
	run := e.start(in)
	res, err := e.wait(run)
	requireCanaryFailed(t, err)
	assert.Equal(t, "CanaryFailed", res.Outcome)
	// An image by resource ID is an install-time upload to the MCO: it moves
	// to the marketplace (platform_helpers.go, reconcileAzureProviderSpec).
	assert.ElementsMatch(t, []string{"c1-arm64", "c1-custom", "c1-worker-a", "c1-worker-b"}, res.Patched)
	assert.Len(t, res.Skipped, 2, "owned, windows")

	tr := e.truth()
	for _, ms := range []string{"c1-worker-a", "c1-worker-b", "c1-arm64", "c1-custom"} {
		m := tr.MachineSets[ms]
		assert.Equal(t, 2, m.ImagePatches, "%s: patched, then restored", ms)
	}
	g1 := install.Images["amd64"].Azure.Gen1
	assert.Equal(t, g1.Publisher+":"+g1.Offer+":"+g1.SKU+":"+g1.Version, tr.MachineSets["c1-worker-a"].Image)
	g2 := install.Images["amd64"].Azure.Gen2
	assert.Equal(t, g2.Publisher+":"+g2.Offer+":"+g2.SKU+":"+g2.Version, tr.MachineSets["c1-worker-b"].Image)
	a := tr.MachineSets["c1-worker-a"]
	assert.Equal(t, int64(1), a.Replicas, "canary scaled back down")
	assert.Len(t, a.Machines, 1)
	assert.Equal(t, spec.SampleInstallRelease, tr.BootImage.OCPVersion)
	assert.Equal(t, ledger.StateFailed, e.attempt(run).State)
	replay.Record(t, e.Client, run.GetID(), run.GetRunID(), "../testdata/histories/bootimage-canary-rollback.json")
}

// A worker dies mid-run (while the canary boots); another worker finishes
// the bump from where it was, without patching anything twice.
func TestBumpSurvivesWorkerKill(t *testing.T) {
	e := setup(t, unmanaged(spec.SampleCluster("c1", spec.PlatformAWS, false)))
	stop1 := e.worker()
	in := fastInput()
	in.SettleInterval = time.Second
	in.Canary = &bootimage.BootImageCanary{Timeout: time.Minute}
	run := e.start(in)

	// Wait until it is patching, then kill the worker.
	require.Eventually(t, func() bool {
		v, err := e.Client.QueryWorkflow(context.Background(), run.GetID(), run.GetRunID(), workflows.ProgressQuery)
		if err != nil {
			return false
		}
		var p bootimage.BootImageProgress
		return v.Get(&p) == nil && (p.Phase == "Patching" || p.Phase == "Canary")
	}, 30*time.Second, 50*time.Millisecond)
	stop1()
	time.Sleep(500 * time.Millisecond)
	e.worker()

	res, err := e.wait(run)
	require.NoError(t, err, "%+v", res)
	assert.Equal(t, "Reconciled", res.Outcome)
	assert.True(t, res.Canary.Joined)
	tr := e.truth()
	for _, ms := range []string{"c1-worker-a", "c1-worker-b"} {
		assert.Equal(t, 1, tr.MachineSets[ms].ImagePatches, "%s patched exactly once", ms)
		assert.Equal(t, golden.Images["amd64"].AWS["us-east-1"], tr.MachineSets[ms].Image)
	}
	assert.Equal(t, int64(1), tr.MachineSets["c1-worker-a"].Replicas)
	assert.Equal(t, ledger.StateCompleted, e.attempt(run).State)
}

// Cancelling mid-run restores what this run patched.
func TestBumpCancelRestores(t *testing.T) {
	e := setup(t, unmanaged(spec.SampleCluster("c1", spec.PlatformAWS, false)))
	e.worker()
	in := fastInput()
	in.SettleInterval = time.Hour
	run := e.start(in)
	require.Eventually(t, func() bool {
		tr := e.truth()
		return tr.MachineSets["c1-worker-a"].ImagePatches == 1 && tr.MachineSets["c1-worker-b"].ImagePatches == 1
	}, 30*time.Second, 50*time.Millisecond)
	require.NoError(t, e.Client.CancelWorkflow(context.Background(), run.GetID(), run.GetRunID()))
	_, err := e.wait(run)
	require.Error(t, err)
	assert.True(t, temporal.IsCanceledError(err), "%v", err)
	tr := e.truth()
	for _, ms := range []string{"c1-worker-a", "c1-worker-b"} {
		assert.Equal(t, install.Images["amd64"].AWS["us-east-1"], tr.MachineSets[ms].Image, "%s restored", ms)
	}
	assert.Equal(t, ledger.StateCancelled, e.attempt(run).State)
}

// pendingActivity is true when the run has an activity of that type started.
func (e *bumpEnv) pendingActivity(run client.WorkflowRun, name string) bool {
	d, err := e.Client.DescribeWorkflowExecution(context.Background(), run.GetID(), run.GetRunID())
	if err != nil {
		return false
	}
	for _, pa := range d.PendingActivities {
		if pa.GetActivityType().GetName() == name && pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
			return true
		}
	}
	return false
}

// Cancelling while a patch is in flight (every machine API call slowed
// down) leaves no MachineSet patched: the workflow waits for the patch
// activity to end before its restore looks.
func TestBumpCancelMidPatchLeavesNothingPatched(t *testing.T) {
	e := setup(t, unmanaged(spec.SampleCluster("c1", spec.PlatformAWS, false)))
	e.worker()
	in := fastInput()
	in.Concurrency = 1
	// Slow from the start: waiting to see an early step before arming
	// raced with that step on a loaded machine.
	e.arm(faults.Fault{Kind: faults.Latency, Target: "api/kube", Latency: "400ms"})
	run := e.start(in)
	require.Eventually(t, func() bool { return e.pendingActivity(run, "ReconcileBootImage") }, 60*time.Second, 20*time.Millisecond)
	require.NoError(t, e.Client.CancelWorkflow(context.Background(), run.GetID(), run.GetRunID()))
	res, err := e.wait(run)
	require.Error(t, err)
	assert.True(t, temporal.IsCanceledError(err), "%v", err)
	// A patch the workflow stopped waiting for would land after the end:
	// give any such call time to finish (a bound, not an assertion).
	time.Sleep(3 * time.Second)
	tr := e.truth()
	for _, ms := range []string{"c1-worker-a", "c1-worker-b"} {
		assert.Equal(t, install.Images["amd64"].AWS["us-east-1"], tr.MachineSets[ms].Image, "%s left patched (restored: %v)", ms, res.Restored)
	}
	replay.Record(t, e.Client, run.GetID(), run.GetRunID(), "../testdata/histories/bootimage-cancel-mid-patch.json")
}

// The canary scale-up has the same race: cancelled while it is in flight,
// the bump ends with the canary MachineSet at its old replicas and every
// patched MachineSet restored.
func TestBumpCancelMidCanaryScaleLeavesNothingChanged(t *testing.T) {
	e := setup(t, unmanaged(spec.SampleCluster("c1", spec.PlatformAWS, false)))
	e.worker()
	before := e.truth()
	in := fastInput()
	in.Canary = &bootimage.BootImageCanary{MachineSet: "c1-worker-a", Timeout: time.Minute}
	e.arm(faults.Fault{Kind: faults.Latency, Target: "api/kube", Latency: "400ms"}) // slow from the start (see above)
	run := e.start(in)
	require.Eventually(t, func() bool { return e.pendingActivity(run, "ScaleMachineSet") }, 60*time.Second, 20*time.Millisecond)
	require.NoError(t, e.Client.CancelWorkflow(context.Background(), run.GetID(), run.GetRunID()))
	res, err := e.wait(run)
	require.Error(t, err)
	assert.True(t, temporal.IsCanceledError(err), "%v", err)
	time.Sleep(3 * time.Second) // let a call the workflow stopped waiting for land (a bound, not an assertion)
	tr := e.truth()
	for _, ms := range []string{"c1-worker-a", "c1-worker-b"} {
		assert.Equal(t, before.MachineSets[ms].Image, tr.MachineSets[ms].Image, "%s image (restored: %v)", ms, res.Restored)
		assert.Equal(t, before.MachineSets[ms].Replicas, tr.MachineSets[ms].Replicas, "%s replicas (restored: %v)", ms, res.Restored)
	}
}

// Checked for the boot image bump: the ledger holds a
// completed bump of c1, but the cluster's MachineSets are back on the old
// image (a fresh fleet with the previous run's ledger, as a second `make
// demo`; on a real cluster, MachineSets put back). "Up to date" is decided
// from the MachineSets' spec, never from the ledger: the bump patches them
// again.
func TestBumpTrustsTheMachineSetsOverTheLedger(t *testing.T) {
	c := unmanaged(spec.SampleCluster("c1", spec.PlatformAWS, false))
	e := setup(t, c)
	stop := e.worker()
	first, err := e.wait(e.start(fastInput()))
	require.NoError(t, err, "%+v", first)
	require.Equal(t, []string{"c1-worker-a", "c1-worker-b"}, first.Patched)
	stop()

	s := &spec.Spec{Seed: 1, SpeedUp: speedUp, Timings: spec.DefaultTimings(), Clusters: []spec.Cluster{c}}
	require.NoError(t, s.Validate())
	e.sim = e.StartFleetsim(s)
	e.worker()
	for _, ms := range []string{"c1-worker-a", "c1-worker-b"} {
		require.Equal(t, install.Images["amd64"].AWS["us-east-1"], e.truth().MachineSets[ms].Image, "a fresh cluster")
	}
	again, err := e.wait(e.start(fastInput()))
	require.NoError(t, err, "%+v", again)
	assert.Equal(t, "Reconciled", again.Outcome)
	assert.Equal(t, []string{"c1-worker-a", "c1-worker-b"}, again.Patched, "patched again, not 'up to date' from the ledger")
	assert.Empty(t, again.UpToDate)
	for _, ms := range []string{"c1-worker-a", "c1-worker-b"} {
		assert.Equal(t, golden.Images["amd64"].AWS["us-east-1"], e.truth().MachineSets[ms].Image, ms)
	}
}

// Found by chaos seeds 2 and 3 (invariant 7): a bump terminated during its
// canary runs no compensation: both MachineSets stay patched and the canary
// scaled up. The next bump of the cluster sees them up to date (the
// MachineSets are the truth), but adopts the dead run's changes from the
// ledger, where they were written before they were made: when its own
// canary fails, every MachineSet is back on its original image and
// replicas.
func TestBumpAfterTerminatedBumpUndoesItsChanges(t *testing.T) {
	ctx := context.Background()
	e := setup(t, unmanaged(spec.SampleCluster("c1", spec.PlatformAWS, false)))
	e.arm(faults.Fault{Kind: faults.MachineBootFailure, Target: "machineset/c1/c1-worker-a"})
	e.worker()
	before := e.truth()
	in := fastInput()
	in.Canary = &bootimage.BootImageCanary{MachineSet: "c1-worker-a", Timeout: time.Hour}
	dead := e.start(in)
	newImage := golden.Images["amd64"].AWS["us-east-1"]
	require.Eventually(t, func() bool {
		tr := e.truth()
		return tr.MachineSets["c1-worker-a"].Image == newImage && tr.MachineSets["c1-worker-b"].Image == newImage &&
			tr.MachineSets["c1-worker-a"].Replicas == before.MachineSets["c1-worker-a"].Replicas+1
	}, 60*time.Second, 50*time.Millisecond, "the first bump patched both and scaled its canary up")
	require.NoError(t, e.Client.TerminateWorkflow(ctx, dead.GetID(), dead.GetRunID(), "chaos: terminated mid-canary"))

	in = fastInput()
	in.Canary = &bootimage.BootImageCanary{MachineSet: "c1-worker-a", Timeout: 3 * time.Second}
	run := e.start(in)
	res, err := e.wait(run)
	requireCanaryFailed(t, err)
	assert.Empty(t, res.Patched, "the dead run's patches look up to date")
	assert.Equal(t, []string{"c1-worker-a", "c1-worker-b"}, res.UpToDate)

	tr := e.truth()
	for _, ms := range []string{"c1-worker-a", "c1-worker-b"} {
		assert.Equal(t, before.MachineSets[ms].Image, tr.MachineSets[ms].Image, "%s image (restored: %v)", ms, res.Restored)
		assert.Equal(t, before.MachineSets[ms].Replicas, tr.MachineSets[ms].Replicas, "%s replicas (restored: %v)", ms, res.Restored)
	}

	// The ledger: the dead run's attempt released as abandoned, with its
	// changes written before it made them; the next run's adopted them.
	byRun := map[string]ledger.Attempt{}
	as, err := e.Store.Attempts(ctx, run.GetID())
	require.NoError(t, err)
	for _, a := range as {
		byRun[a.RunID] = a
	}
	deadAt, nextAt := byRun[dead.GetRunID()], byRun[run.GetRunID()]
	assert.Equal(t, ledger.StateFailed, deadAt.State)
	assert.Equal(t, "abandoned", deadAt.Outcome)
	assert.Equal(t, ledger.StateFailed, nextAt.State)
	type row struct {
		MachineSet string
		Change     ledger.BootImageChangeKind
		From, To   int32
		Adopted    bool
	}
	rows := func(attempt ledger.Attempt) []row {
		cs, err := e.Store.BootImageChanges(ctx, attempt.ID)
		require.NoError(t, err)
		var out []row
		for _, c := range cs {
			out = append(out, row{c.MachineSet, c.Change, c.PreviousReplicas, c.ScaledReplicas, c.AdoptedFrom == deadAt.ID})
			if c.Change == ledger.BootImageChangeImage {
				assert.Contains(t, string(c.PreviousImage), before.MachineSets[c.MachineSet].Image, "%s: the original image", c.MachineSet)
			}
		}
		return out
	}
	assert.Equal(t, []row{
		{"c1-worker-a", ledger.BootImageChangeImage, 0, 0, false},
		{"c1-worker-a", ledger.BootImageChangeScale, 1, 2, false},
		{"c1-worker-b", ledger.BootImageChangeImage, 0, 0, false},
	}, rows(deadAt))
	assert.Equal(t, []row{
		{"c1-worker-a", ledger.BootImageChangeImage, 0, 0, true},
		{"c1-worker-a", ledger.BootImageChangeScale, 1, 3, true},
		{"c1-worker-b", ledger.BootImageChangeImage, 0, 0, true},
	}, rows(nextAt), "adopted, with its own canary scale-up (2 -> 3) on the original")
	replay.Record(t, e.Client, run.GetID(), run.GetRunID(), "../testdata/histories/bootimage-adopt-abandoned.json")
}

// requireCanaryFailed: the bump ended with its canary failed.
func requireCanaryFailed(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, "BootImageBumpCanaryFailed", app.Type())
}

// On AWS the bump asks EC2 who owns each AMI, as the MCO does
// (machine-config-operator pkg/controller/bootimage/aws_helpers.go): the
// install-time AMIs of Red Hat's account are bumped with no list of
// official images on the cluster, and a customer's AMI is left alone.
func TestBumpDecidesAnAMIByItsOwner(t *testing.T) {
	c := unmanaged(spec.SampleCluster("c1", spec.PlatformAWS, true))
	e := setup(t, c)
	e.worker()
	res, err := e.wait(e.start(fastInput()))
	require.NoError(t, err, "%+v", res)
	assert.ElementsMatch(t, []string{"c1-arm64", "c1-worker-a", "c1-worker-b"}, res.Patched)
	tr := e.truth()
	assert.Equal(t, golden.Images["amd64"].AWS["us-east-1"], tr.MachineSets["c1-worker-a"].Image)
	var custom string
	for _, m := range c.MachineSets {
		if m.Name == "c1-custom" {
			custom = m.CustomImage
		}
	}
	require.NotEmpty(t, custom)
	assert.Equal(t, custom, tr.MachineSets["c1-custom"].Image, "a customer's AMI is not bumped")
	assert.Zero(t, tr.MachineSets["c1-custom"].ImagePatches)
	found := false
	for _, s := range res.Skipped {
		if s.MachineSet == "c1-custom" {
			found = true
			assert.Equal(t, string(machineapi.ReasonCustomImage), s.Reason)
			assert.Contains(t, s.Detail, "owned by account")
		}
	}
	assert.True(t, found, "c1-custom is reported skipped: %+v", res.Skipped)
}
