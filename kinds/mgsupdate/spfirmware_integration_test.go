package mgsupdate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// mgsStack is one test's fleetsim rack (4 sleds; mgs/0 runs on cubby 0,
// mgs/1 on cubby 1) at speed-up 100, a worker and the artifacts.
type mgsStack struct {
	t    *testing.T
	env  *testenv.Env
	sim  *fleetsim.Server
	spec *spec.Spec
	dir  string
}

func newMGSStack(t *testing.T, mutate ...func(*spec.Spec)) *mgsStack {
	t.Helper()
	return newMGSStackWorker(t, workerapp.Deps{}, mutate...)
}

// newMGSStackWorker is newMGSStack whose worker is built from d (its
// Fleet set here).
func newMGSStackWorker(t *testing.T, d workerapp.Deps, mutate ...func(*spec.Spec)) *mgsStack {
	t.Helper()
	return newMGSStackFleet(t, d, nil, mutate...)
}

// newMGSStackFleet is newMGSStackWorker whose endpoints edit changes (nil:
// none). A fleet whose racks have no Nexus is driven in direct mode, which
// a deployment says explicitly.
func newMGSStackFleet(t *testing.T, d workerapp.Deps, edit func(e *fleet.Endpoints, simURL string), mutate ...func(*spec.Spec)) *mgsStack {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	s := &spec.Spec{Seed: 21, SpeedUp: 100, Timings: spec.DefaultTimings()}
	s.Timings.FlashBytesPerSecond = 10 << 10 // ×100: 256 KiB in ~0.25 s
	s.Timings.Phase2BytesPerSecond = 5 << 10
	s.Timings.SPResetTime = spec.Duration{Duration: 20 * time.Second}
	s.Timings.HostBootTime = spec.Duration{Duration: 10 * time.Second}
	s.Racks = spec.GenerateRacks(4, 21)
	for _, m := range mutate {
		m(s)
	}
	require.NoError(t, s.Validate())
	env := testenv.Parallel(t)
	st := &mgsStack{t: t, env: env, spec: s, dir: t.TempDir()}
	st.sim = env.StartFleetsim(s)
	// The worker reaches fleetsim through a proxy that checks every MGS
	// response against MGS's OpenAPI document.
	d.Fleet = fleet.FromFleetsim(contractProxy(t, st.sim.URL, 2*len(s.Racks)), env.DatabaseURL)
	d.Fleet.NexusExternalTokenFile = env.NexusTokenFile()
	if !slices.ContainsFunc(s.Racks, func(r spec.Rack) bool { return r.Owners.NexusOn() }) {
		d.Fleet.DirectMode, d.Fleet.NexusLockstep, d.Fleet.NexusExternal = true, "", ""
	}
	if edit != nil {
		edit(&d.Fleet, st.sim.URL)
	}
	env.StartWorker(d)
	return st
}

func fastTiming() mgsupdate.MGSTiming {
	return mgsupdate.MGSTiming{
		PollInterval: 20 * time.Millisecond, ProgressTimeout: time.Second, TakeoverTimeout: time.Second,
		ResetRetryInterval: 300 * time.Millisecond, NewVersionTimeout: 10 * time.Second,
		AttemptDelay: 100 * time.Millisecond, MaxAttempts: 4, HeartbeatTimeout: 3 * time.Second,
	}
}

func (st *mgsStack) spArtifact(version string) mgsupdate.Artifact {
	st.t.Helper()
	path := filepath.Join(st.dir, "sp-"+version+".bin")
	sum, err := simmgs.WriteImageFile(path, simmgs.ImageHeader{Component: simmgs.CompSP, Version: version}, 256<<10)
	require.NoError(st.t, err)
	return mgsupdate.Artifact{Version: version, SHA256: sum, Path: path}
}

func (st *mgsStack) spInput(cubby int, version string) mgsupdate.SPFirmwareInput {
	return mgsupdate.SPFirmwareInput{
		SP:       mgsupdate.SPTarget{Type: fmgs.SpTypeSled, Slot: uint16(cubby), Serial: st.spec.Racks[0].Sleds[cubby].Serial, Part: spec.GeneratedPart},
		Artifact: st.spArtifact(version),
		Timing:   fastTiming(),
	}
}

func (st *mgsStack) arm(f faults.Fault) {
	st.t.Helper()
	b, _ := json.Marshal(f)
	resp, err := http.Post(st.sim.URL+"/faults", "application/json", bytes.NewReader(b))
	require.NoError(st.t, err)
	resp.Body.Close()
	require.Equal(st.t, http.StatusCreated, resp.StatusCode)
}

func (st *mgsStack) startWF(kind workflows.Kind, in workflows.UpdateInput, wf any) client.WorkflowRun {
	st.t.Helper()
	// A unique suffix: tests share one Temporal namespace.
	id := workflows.WorkflowID(kind, in.Target()) + "#" + uuid.NewString()[:8]
	run, err := st.env.Client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: id, TaskQueue: st.env.TaskQueue,
		TypedSearchAttributes: workflows.StartAttributes(kind, in.Target(), in.ArtifactVersion()),
	}, wf, in)
	require.NoError(st.t, err)
	return run
}

func (st *mgsStack) result(run client.WorkflowRun) (mgsupdate.MGSUpdateResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var res mgsupdate.MGSUpdateResult
	err := run.Get(ctx, &res)
	return res, err
}

func (st *mgsStack) truth(cubby int) simmgs.SPTruth {
	tr := st.sim.Truth()[simmgs.Name].(simmgs.Truth)
	return tr.Racks[0].SPs[cubby]
}

func completed(ds []simmgs.Delivery) []simmgs.Delivery {
	var out []simmgs.Delivery
	for _, d := range ds {
		if d.Outcome == "complete" && !d.Foreign {
			out = append(out, d)
		}
	}
	return out
}

// checkLedgerAgrees: exactly one completed delivery of ours, and it is the
// ledger's completed attempt.
func (st *mgsStack) checkLedgerAgrees(run client.WorkflowRun, cubby int, res mgsupdate.MGSUpdateResult) []ledger.Attempt {
	st.t.Helper()
	atts, err := st.env.Store.Attempts(context.Background(), run.GetID())
	require.NoError(st.t, err)
	require.NotEmpty(st.t, atts)
	require.Len(st.t, atts, len(res.AttemptIDs))
	last := atts[len(atts)-1]
	assert.Equal(st.t, ledger.StateCompleted, last.State)
	assert.Equal(st.t, res.Outcome, last.Outcome)
	for _, a := range atts[:len(atts)-1] {
		assert.Equal(st.t, ledger.StateFailed, a.State, "earlier attempts failed: %+v", a)
	}
	done := completed(st.truth(cubby).Deliveries)
	if res.Outcome == mgsupdate.MGSOutcomeCompletedUpdate {
		require.Len(st.t, done, 1, "exactly one completed delivery per successful update")
		assert.Equal(st.t, last.ID, done[0].UpdateID, "the ledger's completed attempt is the delivered update")
		assert.Equal(st.t, res.UpdateID, last.ID.String())
	} else {
		assert.Empty(st.t, done)
	}
	return atts
}

func (st *mgsStack) historyLen(run client.WorkflowRun) int {
	iter := st.env.Client.GetWorkflowHistory(context.Background(), run.GetID(), run.GetRunID(), false, 0)
	n := 0
	for iter.HasNext() {
		_, err := iter.Next()
		require.NoError(st.t, err)
		n++
	}
	return n
}

func TestSPFirmwareAgainstFleetsimHappyPath(t *testing.T) {
	st := newMGSStack(t)
	in := st.spInput(2, "1.1.0")
	in.ExpectedActive, in.ExpectedInactive = spec.GeneratedSPActive, spec.GeneratedSPInactive
	run := st.startWF(workflows.KindSPFirmware, in, mgsupdate.SPFirmwareUpdate)
	res, err := st.result(run)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	assert.Equal(t, "1.0.0", res.PreviousVersion)
	tr := st.truth(2)
	assert.Equal(t, "1.1.0", tr.SP.Active.Version)
	assert.Equal(t, 1, tr.Resets)
	atts := st.checkLedgerAgrees(run, 2, res)
	evs, err := st.env.Store.Events(context.Background(), atts[0].ID)
	require.NoError(t, err)
	var steps []string
	for _, e := range evs {
		steps = append(steps, e.Step)
	}
	assert.Equal(t, []string{"intent", "sending-1", "start", "reset-1", "activated", "finish"}, steps)
	n := st.historyLen(run)
	t.Logf("history: %d events", n)
	assert.LessOrEqual(t, n, 60, "no event per poll")
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/sp-firmware-happy.json")

	// Again: already at target.
	again := st.startWF(workflows.KindSPFirmware, st.spInput(2, "1.1.0"), mgsupdate.SPFirmwareUpdate)
	res2, err := st.result(again)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeNoChangeNeeded, res2.Outcome)
	assert.Len(t, st.truth(2).Deliveries, 1, "nothing delivered")
	assert.Equal(t, 1, st.truth(2).Resets)
}

func TestSPFirmwareAgainstFleetsimNeverRollsBack(t *testing.T) {
	st := newMGSStack(t)
	run := st.startWF(workflows.KindSPFirmware, st.spInput(2, "0.5.0"), mgsupdate.SPFirmwareUpdate)
	_, err := st.result(run)
	require.Error(t, err)
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, failure.WouldDowngrade, ae.Type())
	assert.Empty(t, st.truth(2).Deliveries)
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/sp-firmware-would-downgrade.json")
}

// An SP image for another board is refused by the SP itself
// (503 UpdateFailed "board mismatch"): the update ends ImageRefused after
// one attempt, where it used to re-send the image for hours.
func TestSPFirmwareImageForAnotherBoardEndsInOneAttempt(t *testing.T) {
	st := newMGSStack(t)
	in := st.spInput(2, "1.1.0")
	path := filepath.Join(st.dir, "sp-sidecar.bin")
	sum, err := simmgs.WriteImageFile(path, simmgs.ImageHeader{Component: simmgs.CompSP, Version: "1.1.0", Board: "sidecar-b"}, 256<<10)
	require.NoError(t, err)
	in.Artifact = mgsupdate.Artifact{Version: "1.1.0", SHA256: sum, Path: path}
	run := st.startWF(workflows.KindSPFirmware, in, mgsupdate.SPFirmwareUpdate)
	_, err = st.result(run)
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, failure.ImageRefused, ae.Type())
	assert.Contains(t, ae.Error(), "board mismatch")
	assert.Empty(t, st.truth(2).Deliveries, "nothing delivered")
	atts, err := st.env.Store.Attempts(context.Background(), run.GetID())
	require.NoError(t, err)
	require.Len(t, atts, 1, "one attempt")
	assert.Equal(t, ledger.StateFailed, atts[0].State)
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/sp-firmware-image-refused.json")
}

func TestSPFirmwareAgainstFleetsimDeviceFaults(t *testing.T) {
	cases := []struct {
		name    string
		fault   faults.Kind
		outcome string // first delivery's outcome
	}{
		{"reset mid-delivery", faults.SPResetMidDelivery, "lost"},
		{"stuck", faults.SPStuck, "aborted"},
		{"failed", faults.UpdateFailed, "failed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := newMGSStack(t)
			st.arm(faults.Fault{Kind: c.fault, Target: "sp/sled/3", AfterPercent: 40, Times: 1})
			run := st.startWF(workflows.KindSPFirmware, st.spInput(3, "1.1.0"), mgsupdate.SPFirmwareUpdate)
			res, err := st.result(run)
			require.NoError(t, err)
			assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
			require.Len(t, res.AttemptIDs, 2, "a new attempt with a new UUID")
			tr := st.truth(3)
			require.Len(t, tr.Deliveries, 2)
			assert.Equal(t, c.outcome, tr.Deliveries[0].Outcome)
			assert.Equal(t, res.AttemptIDs[0], tr.Deliveries[0].UpdateID.String())
			assert.Equal(t, "1.1.0", tr.SP.Active.Version)
			st.checkLedgerAgrees(run, 3, res)
			if c.fault == faults.SPResetMidDelivery {
				replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/sp-firmware-second-attempt.json")
			}
		})
	}
}

func TestSPFirmwareAgainstFleetsimConcurrentUpdate(t *testing.T) {
	t.Run("wait", func(t *testing.T) {
		st := newMGSStack(t)
		st.arm(faults.Fault{Kind: faults.ForeignUpdate, Target: "sp/sled/2", Version: "1.1.0", Latency: "300ms", Times: 1})
		run := st.startWF(workflows.KindSPFirmware, st.spInput(2, "1.1.0"), mgsupdate.SPFirmwareUpdate)
		res, err := st.result(run)
		require.NoError(t, err)
		assert.Equal(t, mgsupdate.MGSOutcomeWaitedConcurrent, res.Outcome)
		tr := st.truth(2)
		require.Len(t, tr.Deliveries, 1)
		assert.True(t, tr.Deliveries[0].Foreign)
		assert.Equal(t, tr.Deliveries[0].UpdateID.String(), res.UpdateID)
		assert.Equal(t, "1.1.0", tr.SP.Active.Version)
		assert.Equal(t, 1, tr.Resets, "the foreign actor reset it, not us")
		st.checkLedgerAgrees(run, 2, res)
	})
	t.Run("take over", func(t *testing.T) {
		st := newMGSStack(t)
		st.arm(faults.Fault{Kind: faults.ForeignUpdate, Target: "sp/sled/2", Version: "1.1.0", Times: 1})
		run := st.startWF(workflows.KindSPFirmware, st.spInput(2, "1.1.0"), mgsupdate.SPFirmwareUpdate)
		res, err := st.result(run)
		require.NoError(t, err)
		assert.Equal(t, mgsupdate.MGSOutcomeTookOver, res.Outcome)
		tr := st.truth(2)
		require.Len(t, tr.Deliveries, 1)
		assert.Equal(t, tr.Deliveries[0].UpdateID.String(), res.UpdateID)
		assert.Equal(t, "1.1.0", tr.SP.Active.Version)
		assert.Equal(t, 1, tr.Resets)
		st.checkLedgerAgrees(run, 2, res)
	})
	t.Run("older foreign version then ours", func(t *testing.T) {
		// The concurrent update writes 1.0.5 and its actor resets the SP;
		// we then deliver our 1.1.0.
		st := newMGSStack(t)
		st.arm(faults.Fault{Kind: faults.ForeignUpdate, Target: "sp/sled/2", Version: "1.0.5", Latency: "100ms", Times: 1})
		run := st.startWF(workflows.KindSPFirmware, st.spInput(2, "1.1.0"), mgsupdate.SPFirmwareUpdate)
		res, err := st.result(run)
		require.NoError(t, err)
		assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
		assert.Equal(t, "1.1.0", st.truth(2).SP.Active.Version)
		st.checkLedgerAgrees(run, 2, res)
	})
}

func TestSPFirmwareAgainstFleetsimMGSDown(t *testing.T) {
	st := newMGSStack(t)
	st.arm(faults.Fault{Kind: faults.MGSDown, Target: "mgs/0"})
	run := st.startWF(workflows.KindSPFirmware, st.spInput(2, "1.1.0"), mgsupdate.SPFirmwareUpdate)
	res, err := st.result(run)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	tr := st.truth(2)
	require.Len(t, tr.Deliveries, 1)
	assert.Equal(t, 1, tr.Deliveries[0].MGS, "delivered through the MGS that was up")
	st.checkLedgerAgrees(run, 2, res)
}

// Sled 0 hosts mgs/0, which refuses to reset its SP: the reset goes through mgs/1.
func TestSPFirmwareAgainstFleetsimResetOfLocalSled(t *testing.T) {
	st := newMGSStack(t)
	run := st.startWF(workflows.KindSPFirmware, st.spInput(0, "1.1.0"), mgsupdate.SPFirmwareUpdate)
	res, err := st.result(run)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	tr := st.truth(0)
	assert.Equal(t, "1.1.0", tr.SP.Active.Version)
	assert.Equal(t, 1, tr.Resets)
	st.checkLedgerAgrees(run, 0, res)
}

// The reset happens but its reply is lost: the workflow re-checks the
// version and does not reset a second time.
func TestSPFirmwareAgainstFleetsimLostResetReply(t *testing.T) {
	st := newMGSStack(t)
	st.arm(faults.Fault{Kind: faults.ResetReplyLost, Target: "sp/sled/2", Times: 2})
	run := st.startWF(workflows.KindSPFirmware, st.spInput(2, "1.1.0"), mgsupdate.SPFirmwareUpdate)
	res, err := st.result(run)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	tr := st.truth(2)
	assert.Equal(t, "1.1.0", tr.SP.Active.Version)
	assert.Equal(t, 1, tr.Resets, "a reset whose reply was lost is not repeated")
	atts := st.checkLedgerAgrees(run, 2, res)
	evs, err := st.env.Store.Events(context.Background(), atts[0].ID)
	require.NoError(t, err)
	var lost bool
	for _, e := range evs {
		if e.Step == "reset-1" {
			lost = bytes.Contains([]byte(e.Message), []byte("reply lost"))
		}
	}
	assert.True(t, lost, "the ledger records the lost reply: %+v", evs)
}

func TestSPFirmwareAgainstFleetsimCancelMidDelivery(t *testing.T) {
	st := newMGSStack(t)
	st.arm(faults.Fault{Kind: faults.SPStuck, Target: "sp/sled/2", AfterPercent: 30, Times: 1})
	in := st.spInput(2, "1.1.0")
	in.Timing.ProgressTimeout = time.Minute
	run := st.startWF(workflows.KindSPFirmware, in, mgsupdate.SPFirmwareUpdate)
	require.Eventually(t, func() bool {
		ds := st.truth(2).Deliveries
		return len(ds) == 1 && ds[0].Bytes > 0
	}, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, st.env.Client.CancelWorkflow(context.Background(), run.GetID(), run.GetRunID()))
	_, err := st.result(run)
	require.Error(t, err)
	var ce *temporal.CanceledError
	require.True(t, errors.As(err, &ce), "%v", err)

	tr := st.truth(2)
	require.Len(t, tr.Deliveries, 1)
	id := tr.Deliveries[0].UpdateID
	assert.Equal(t, map[string]any{"state": "aborted", "id": id}, tr.Updates["sp"], "SP shows aborted{our id}")
	atts, err := st.env.Store.Attempts(context.Background(), run.GetID())
	require.NoError(t, err)
	require.Len(t, atts, 1)
	assert.Equal(t, id, atts[0].ID)
	assert.Equal(t, ledger.StateCancelled, atts[0].State)
	assert.Contains(t, atts[0].Error, "abort "+id.String()+": aborted")
}

func (st *mgsStack) hostInput(cubby int) mgsupdate.HostFlashInput {
	st.t.Helper()
	return st.hostInputNaming(cubby, "")
}

// hostInputNaming is hostInput whose phase 1 names phase 2 image names
// ("": the phase 2 it comes with; another ID makes a phase 1 whose pair
// nobody writes, so the host cannot boot it).
func (st *mgsStack) hostInputNaming(cubby int, names string) mgsupdate.HostFlashInput {
	st.t.Helper()
	return st.hostInputSized(cubby, names, 128<<10)
}

// hostInputSized is hostInputNaming with a phase 2 image of size bytes.
func (st *mgsStack) hostInputSized(cubby int, names string, size int) mgsupdate.HostFlashInput {
	st.t.Helper()
	p2 := simmgs.MakePhase2Image("2.0.0", size)
	p2Path := filepath.Join(st.dir, "phase2.bin")
	require.NoError(st.t, os.WriteFile(p2Path, p2, 0o644))
	p2sum := simmgs.SHA256Hex(p2)
	if names == "" {
		names = simmgs.Phase2ID(p2)
	}
	p1Path := filepath.Join(st.dir, "phase1.bin")
	// Phase 1 names its phase 2 by the header's SHA-256, as MGS does.
	p1sum, err := simmgs.WriteImageFile(p1Path, simmgs.ImageHeader{Component: simmgs.CompHost, Version: "2.0.0", Phase2: names}, 64<<10)
	require.NoError(st.t, err)
	return mgsupdate.HostFlashInput{
		Sled:   mgsupdate.SPTarget{Type: fmgs.SpTypeSled, Slot: uint16(cubby), Serial: st.spec.Racks[0].Sleds[cubby].Serial},
		Phase1: mgsupdate.Artifact{Version: "2.0.0", SHA256: p1sum, Path: p1Path},
		Phase2: mgsupdate.Artifact{Version: "2.0.0", SHA256: p2sum, Path: p2Path},
		Timing: fastTiming(),
	}
}

// The worker dies mid-delivery; another one picks the update up where it
// was: the same attempt keeps waiting on the same device update, nothing is
// delivered twice.
func TestSPFirmwareAgainstFleetsimSurvivesWorkerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + Temporal + fleetsim")
	}
	s := &spec.Spec{Seed: 21, SpeedUp: 100, Timings: spec.DefaultTimings()}
	s.Timings.FlashBytesPerSecond = 2 << 10 // ×100: 256 KiB in ~1.3 s
	s.Timings.SPResetTime = spec.Duration{Duration: 20 * time.Second}
	s.Racks = spec.GenerateRacks(4, 21)
	require.NoError(t, s.Validate())
	env := testenv.Parallel(t)
	st := &mgsStack{t: t, env: env, spec: s, dir: t.TempDir()}
	st.sim = env.StartFleetsim(s)
	deps := workerapp.Deps{Fleet: env.Endpoints(st.sim)}
	stop := env.StartWorker(deps)

	in := st.spInput(2, "1.1.0")
	in.Timing.ProgressTimeout = 20 * time.Second
	run := st.startWF(workflows.KindSPFirmware, in, mgsupdate.SPFirmwareUpdate)
	require.Eventually(t, func() bool {
		ds := st.truth(2).Deliveries
		return len(ds) == 1 && ds[0].Bytes > 0
	}, 30*time.Second, 5*time.Millisecond)
	stop()
	env.StartWorker(deps)

	res, err := st.result(run)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	assert.Len(t, res.AttemptIDs, 1, "the same attempt carried on")
	assert.Len(t, st.truth(2).Deliveries, 1, "nothing delivered twice")
	st.checkLedgerAgrees(run, 2, res)
}
