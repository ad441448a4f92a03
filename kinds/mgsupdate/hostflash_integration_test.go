package mgsupdate_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// The seed scenario: the phase 2 image is on both MGS, and the SP attaches
// to mgs/1 (cubby 2 with seed 21) while the workflow talks to mgs/0 first.
// With today's MGS (served-only, the default) mgs/0 knows nothing of the
// fetch; with the SP's own record (opt-in) both answer. Either way the
// workflow shows rising progress and completes, and the host really
// fetched the new phase 2 through the SP.
func TestHostFlashSeedScenarioServedOnly(t *testing.T) { hostFlashSeedScenario(t, false) }

func TestHostFlashSeedScenarioSPRecord(t *testing.T) { hostFlashSeedScenario(t, true) }

func hostFlashSeedScenario(t *testing.T, spRecord bool) {
	const cubby = 2
	st := newMGSStack(t, func(s *spec.Spec) {
		s.Racks[0].SPPhase2Record = spRecord
		s.Timings.Phase2BytesPerSecond = 1 << 8 // ×100: 128 KiB in ~5 s, long enough to watch on a loaded machine
	})
	in := st.hostInput(cubby)
	in.Timing.CheckpointEvery = 100 * time.Millisecond
	in.Timing.NewVersionTimeout = time.Minute // the fetch alone takes ~5 s
	run := st.startWF(workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)

	// Watch the progress query while the host boots.
	var offsets []int64
	var total int64
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		desc, err := st.env.Client.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
		require.NoError(t, err)
		if desc.WorkflowExecutionInfo.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			break
		}
		if p, ok := st.progress(ctx, run); ok && p.Phase == mgsupdate.MGSPhaseHostBoot && p.Done > 0 {
			if len(offsets) == 0 || offsets[len(offsets)-1] != p.Done {
				offsets = append(offsets, p.Done)
			}
			total = p.Total
		}
		time.Sleep(5 * time.Millisecond)
	}
	res, err := st.result(run)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)

	t.Logf("progress offsets seen: %v of %d", offsets, total)
	require.NotEmpty(t, offsets, "the progress query showed the phase 2 fetch")
	assert.True(t, slices.IsSorted(offsets), "progress only rises: %v", offsets)
	assert.Less(t, offsets[0], int64(128<<10), "progress was seen before the fetch finished")
	assert.EqualValues(t, 128<<10, total)

	tr := st.truth(cubby)
	require.NotNil(t, tr.Host.AttachedMGS)
	assert.Equal(t, 1, *tr.Host.AttachedMGS, "the SP attached to mgs/1")
	assert.Equal(t, simmgs.HostRunning, tr.Host.State)
	assert.Equal(t, simmgs.Phase2FromRecovery, tr.Host.Phase2Source, "phase 2 came through the SP, not from disk")
	assert.Equal(t, in.Phase2.SHA256, tr.Host.BootedPhase2)
	assert.Equal(t, 1, tr.Host.BootedSlot)
	assert.False(t, tr.Host.StartupOptions.Phase2RecoveryMode, "recovery mode cleared after the boot")
	mgsTruth := st.sim.Truth()[simmgs.Name].(simmgs.Truth).Racks[0].MGS
	_, served := mgsTruth[0].Served["sled/2"]
	assert.False(t, served, "mgs/0 served none of it")
	st.checkLedgerAgrees(run, cubby, res)

	atts, err := st.env.Store.Attempts(context.Background(), run.GetID())
	require.NoError(t, err)
	last := atts[len(atts)-1]
	assert.Equal(t, "host-boot", last.Phase)
	assert.EqualValues(t, 128<<10, last.Done, "the ledger shows the fetch at 100%")
	if !spRecord {
		replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/host-flash-seed-served-only.json")
	}
}

func (st *mgsStack) progress(ctx context.Context, run client.WorkflowRun) (mgsupdate.MGSProgress, bool) {
	v, err := st.env.Client.QueryWorkflow(ctx, run.GetID(), run.GetRunID(), workflows.ProgressQuery)
	if err != nil {
		return mgsupdate.MGSProgress{}, false
	}
	var p mgsupdate.MGSProgress
	return p, v.Get(&p) == nil
}

// An SP whose inactive slot holds no valid image (normal after a reset
// mid-update): today's MGS answers the caboose read with 503
// SpCommunicationFailed. The precheck reads that as "no valid version" at
// its first attempt: a caller expecting a version fails at once with a
// clear error; one expecting "invalid" gets the update.
func TestSPFirmwareAgainstFleetsimInvalidInactiveSlot(t *testing.T) {
	const cubby = 3
	st := newMGSStack(t, func(s *spec.Spec) { s.Racks[0].Sleds[cubby].SP.Inactive = "" })

	in := st.spInput(cubby, "1.1.0")
	in.ExpectedInactive = spec.GeneratedSPInactive
	run := st.startWF(workflows.KindSPFirmware, in, mgsupdate.SPFirmwareUpdate)
	_, err := st.result(run)
	require.Error(t, err)
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, failure.WrongInactiveVersion, ae.Type())
	assert.Contains(t, err.Error(), "found "+mgsupdate.NoValidVersion)
	assert.Equal(t, []int32{1}, st.activityAttempts(run, "MGSPrecheck"), "one precheck, no retries")
	assert.Empty(t, st.truth(cubby).Deliveries)
	atts, err := st.env.Store.Attempts(context.Background(), run.GetID())
	require.NoError(t, err)
	require.Len(t, atts, 1)
	assert.Equal(t, ledger.StateFailed, atts[0].State)

	in = st.spInput(cubby, "1.1.0")
	in.ExpectedInactive = mgsupdate.NoValidVersion
	run = st.startWF(workflows.KindSPFirmware, in, mgsupdate.SPFirmwareUpdate)
	res, err := st.result(run)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	assert.Equal(t, "1.1.0", st.truth(cubby).SP.Active.Version)
}

// activityAttempts lists the attempt number of each start of activity typ
// (for a local activity, the attempt its marker recorded).
func (st *mgsStack) activityAttempts(run client.WorkflowRun, typ string) []int32 {
	st.t.Helper()
	iter := st.env.Client.GetWorkflowHistory(context.Background(), run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]bool{}
	var out []int32
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(st.t, err)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == typ {
			scheduled[ev.GetEventId()] = true
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] {
			out = append(out, a.GetAttempt())
		}
		if m := ev.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "LocalActivity" {
			var la struct {
				ActivityType string
				Attempt      int32
			}
			require.NoError(st.t, converter.GetDefaultDataConverter().FromPayloads(m.GetDetails()["data"], &la))
			if la.ActivityType == typ {
				out = append(out, la.Attempt)
			}
		}
	}
	return out
}
