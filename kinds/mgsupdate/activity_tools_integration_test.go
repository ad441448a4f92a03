package mgsupdate_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// pausedFor outlasts the start step's heartbeat timeout (fastTiming: 3 s),
// so a pause is not mistaken for a dead worker's lost heartbeat.
const pausedFor = 4 * time.Second

// An operator uses Temporal's activity tools on the SP firmware start
// (which also waits for the delivery) while the SP receives our image:
// pauses it past its heartbeat timeout and unpauses it; resets it, with
// and without its heartbeats; shortens its timeout below the delivery's
// time. Each time the step is asked again and follows our update on the
// SP by its send record: the image was sent once, the SP reset once, and
// the update ends completed in its one attempt, as without the tool.
func TestSPFirmwareStartUnderTheActivityTools(t *testing.T) {
	for _, c := range []struct {
		name string
		use  func(st *mgsStack, workflowID, activityID string)
		// retried: the tool ended the running attempt, so the step that
		// completed is a later one (a reset starts its count again at 1).
		retried bool
	}{
		{"pause-past-heartbeat-then-unpause", func(st *mgsStack, id, aid string) {
			testenv.PauseActivity(st.t, st.env.Client, id, aid)
			time.Sleep(pausedFor)
			testenv.UnpauseActivity(st.t, st.env.Client, id, aid)
		}, true},
		{"reset", func(st *mgsStack, id, aid string) { testenv.ResetActivity(st.t, st.env.Client, id, aid, false) }, false},
		{"reset-heartbeats", func(st *mgsStack, id, aid string) { testenv.ResetActivity(st.t, st.env.Client, id, aid, true) }, false},
		{"timeout-shortened", func(st *mgsStack, id, aid string) {
			testenv.ShortenActivity(st.t, st.env.Client, id, aid, 500*time.Millisecond)
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			const cubby = 2
			st := newMGSStack(t, func(s *spec.Spec) {
				s.Timings.FlashBytesPerSecond = 1 << 10 // ×100: 256 KiB in 2.5 s to use the tool in
			})
			run := st.startWF(workflows.KindSPFirmware, st.spInput(cubby, "1.1.0"), mgsupdate.SPFirmwareUpdate)
			st.awaitDelivering(cubby)
			pa := testenv.RunningActivity(t, st.env.Client, run.GetID(), startActivity, toolWithin)
			c.use(st, run.GetID(), pa.GetActivityId())

			st.requireRunUpdatedOnce(run, cubby)
			if c.retried {
				assert.Greater(t, startedAttempt(t, st, run.GetID()), int32(1), "the tool ended the running attempt")
			}
		})
	}
}

// startedAttempt is the attempt number of the start step that completed.
func startedAttempt(t *testing.T, st *mgsStack, workflowID string) int32 {
	t.Helper()
	it := st.env.Client.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]bool{}
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == startActivity {
			scheduled[e.GetEventId()] = true
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] {
			return a.GetAttempt()
		}
	}
	t.Fatalf("%s: no %s started", workflowID, startActivity)
	return 0
}

// requireRunUpdatedOnce: the SP update of cubby to 1.1.0 ended completed in
// one attempt, its image sent once and activated by one reset, as the
// ledger says.
func (st *mgsStack) requireRunUpdatedOnce(run client.WorkflowRun, cubby int) mgsupdate.MGSUpdateResult {
	st.t.Helper()
	res, err := st.result(run)
	require.NoError(st.t, err)
	assert.Equal(st.t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	assert.Equal(st.t, 1, res.Attempts, "no second attempt: %+v", res)
	tr := st.truth(cubby)
	assert.Equal(st.t, "1.1.0", tr.SP.Active.Version)
	require.Len(st.t, tr.Deliveries, 1, "our image was sent once: %+v", tr.Deliveries)
	assert.Equal(st.t, "complete", tr.Deliveries[0].Outcome, "not cut off mid-delivery")
	assert.Equal(st.t, 1, tr.Resets, "one reset, the one that activated the update")
	st.checkLedgerAgrees(run, cubby, res)
	return res
}
