package mgsupdate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// seenProgress is what an operator saw of a long step while it ran: the
// progress query's distinct byte counts strictly between 0 and the total,
// and the current details that showed a percentage.
type seenProgress struct {
	done    map[int64]bool
	details []string
}

// watchProgress reads the progress query and the Web UI's current details
// (the SDK's workflow metadata query) every 200 ms until the run ends,
// keeping what it saw during phase.
func watchProgress(t *testing.T, c client.Client, run client.WorkflowRun, phase workflows.Phase) seenProgress {
	t.Helper()
	seen := seenProgress{done: map[int64]bool{}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		var p mgsupdate.MGSProgress
		v, err := c.QueryWorkflow(ctx, run.GetID(), run.GetRunID(), workflows.ProgressQuery)
		if err == nil && v.Get(&p) == nil {
			if p.State != workflows.StateRunning {
				return seen
			}
			if p.Phase == phase && p.Done > 0 && p.Done < p.Total {
				seen.done[p.Done] = true
			}
		}
		var md sdkpb.WorkflowMetadata
		if v, err := c.QueryWorkflow(ctx, run.GetID(), run.GetRunID(), "__temporal_workflow_metadata"); err == nil && v.Get(&md) == nil {
			if d := md.GetCurrentDetails(); strings.Contains(d, "%") && strings.Contains(d, string(phase)) && !strings.Contains(d, "100%") {
				if len(seen.details) == 0 || seen.details[len(seen.details)-1] != d {
					seen.details = append(seen.details, d)
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return seen
}

// watchToCompletion watches run (watchProgress, during phase) to its end
// and requires that it completed the update.
func (st *mgsStack) watchToCompletion(run client.WorkflowRun, phase workflows.Phase) (mgsupdate.MGSUpdateResult, seenProgress) {
	st.t.Helper()
	seen := watchProgress(st.t, st.env.Client, run, phase)
	res, err := st.result(run)
	require.NoError(st.t, err)
	assert.Equal(st.t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	st.t.Logf("progress seen: %d byte counts; current details: %q", len(seen.done), seen.details)
	return res, seen
}

// requireRose: an operator saw the progress query and the current details
// move during step (at least three values each, not 0 then done).
func (seen seenProgress) requireRose(t *testing.T, step string) {
	t.Helper()
	assert.GreaterOrEqual(t, len(seen.done), 3, "the progress query moved during %s", step)
	assert.GreaterOrEqual(t, len(seen.details), 3, "the current details moved during %s", step)
}

// progressSignals counts the step-progress signals in a run's history.
func (st *mgsStack) progressSignals(run client.WorkflowRun) int {
	iter := st.env.Client.GetWorkflowHistory(context.Background(), run.GetID(), run.GetRunID(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	n := 0
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(st.t, err)
		if a := e.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == activities.ProgressSignal {
			n++
		}
	}
	return n
}

// During a long SP delivery the workflow's progress query and its
// current details (what the Web UI shows) move, where they once stayed
// at 0 and jumped to done at the end; the history grows by at most one signal
// per tenth of the delivery, not with its duration.
func TestSPFirmwareProgressMovesDuringDelivery(t *testing.T) {
	st := newMGSStack(t, func(s *spec.Spec) {
		s.Timings.FlashBytesPerSecond = 200 // ×100: 256 KiB in about 13 s
	})
	in := st.spInput(2, "1.1.0")
	run := st.startWF(workflows.KindSPFirmware, in, mgsupdate.SPFirmwareUpdate)
	_, seen := st.watchToCompletion(run, mgsupdate.MGSPhaseUpdating)
	seen.requireRose(t, "the delivery")
	signals := st.progressSignals(run)
	assert.LessOrEqual(t, signals, activities.ProgressSteps-1, "at most one signal per tenth of the one delivery")
	n := st.historyLen(run)
	t.Logf("history: %d events, %d progress signals", n, signals)
	assert.LessOrEqual(t, n, 60+4*(activities.ProgressSteps-1), "bounded by the tenths, not the delivery's duration")
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/sp-firmware-progress-signals.json")
}

// The same during a host's phase 1 delivery through MGS. (Host flash
// writes phase 2 through sled-agent's artifact store, not over the
// recovery path: the MGS-served phase 2 fetch is the recovery operation's,
// TestHostRecoveryFetchesThroughTheOtherMGS.)
func TestHostFlashProgressMovesDuringPhase1Delivery(t *testing.T) {
	st := newMGSStack(t, func(s *spec.Spec) {
		s.Timings.FlashBytesPerSecond = 50 // ×100: the 64 KiB phase 1 image in about 13 s
	})
	in := st.hostInput(3)
	in.Timing.NewVersionTimeout = time.Minute
	run := st.startWF(workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)
	_, seen := st.watchToCompletion(run, mgsupdate.MGSPhaseUpdating)
	seen.requireRose(t, "the phase 1 delivery")
	n := st.historyLen(run)
	t.Logf("history: %d events, %d progress signals", n, st.progressSignals(run))
	assert.LessOrEqual(t, st.progressSignals(run), activities.ProgressSteps-1, "the phase 1 delivery: a tenth at most")
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/host-flash-progress-signals.json")
}

// On a rack, host flash first uploads phase 2 (about 1 GiB) into the
// sled's artifact store, minutes of the step: the progress query and the
// current details move during that upload too, by the bytes sent.
func TestHostFlashProgressMovesDuringPhase2Upload(t *testing.T) {
	// The upload (about 20 s) outlasts the test environment's 10 s
	// request timeout: the upload is bounded by its stalls, not by the
	// timeout of one fleet request.
	st := newMGSStack(t, func(s *spec.Spec) {
		// ×100: the 64 MiB phase 2 in about 20 s. 64 MiB, not the
		// usual 128 KiB: the socket buffers between worker and store
		// would hold a small image whole, its upload done at once.
		s.Timings.ArtifactStoreBytesPerSecond = 32 << 10
	})
	in := st.hostInputSized(3, "", 64<<20)
	in.Timing.NewVersionTimeout = time.Minute
	run := st.startWF(workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)
	_, seen := st.watchToCompletion(run, mgsupdate.MGSPhaseHostPhase2)
	seen.requireRose(t, "the phase 2 upload")
	signals := st.progressSignals(run)
	t.Logf("history: %d events, %d progress signals", st.historyLen(run), signals)
	assert.LessOrEqual(t, signals, 2*(activities.ProgressSteps-1), "a tenth at most, of the phase 2 upload and of the phase 1 delivery")
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/host-flash-phase2-progress-signals.json")
}
