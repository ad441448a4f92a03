package mgsupdate_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// testUploadStall is the worker's phase 2 upload stall timeout in this
// test (the product's is 75 s): above the keep-alive's beat (a third of
// fastTiming's 3 s heartbeat timeout), so the stall, not the heartbeat
// timeout, is what ends the stalled try.
const testUploadStall = 2 * time.Second

// A host flash whose first phase 2 upload the sled-agent's artifact store
// stops taking halfway, and never answers: the stall timeout ends that
// try, the step's retry sends the image again, and the update completes
// with one attempt, one phase 1 delivery, and the new phase 1 and phase 2
// on the host.
func TestHostFlashPhase2UploadStallIsSentAgain(t *testing.T) {
	const cubby = 2
	st := newMGSStackWorker(t, workerapp.Deps{Phase2UploadStall: testUploadStall})
	in := st.hostInput(cubby)
	sledID := st.spec.Racks[0].Sleds[cubby].ID
	st.arm(faults.Fault{Kind: faults.ArtifactUploadStall, Target: "sled/" + sledID.String(), AfterPercent: 50, Times: 1})

	run := st.startWF(workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)
	res, err := st.result(run)
	require.NoError(t, err)
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	atts := st.checkLedgerAgrees(run, cubby, res)
	assert.Len(t, atts, 1, "the stall cost a retry of the step, not an attempt")
	assert.Len(t, st.truth(cubby).Deliveries, 1, "phase 1 delivered once")
	st.requireRunning(cubby, 1, phase2ID(t, in.Phase2.Path))
	h := st.sledTruth(cubby).Host
	assert.Equal(t, in.Phase2.SHA256, h.Disks[1].Artifact, "the upload sent again reached disk B")
	assert.Equal(t, in.Phase1.SHA256, st.truth(cubby).Host.Slots[1].SHA256, "the new phase 1 in slot 1")
	assert.Equal(t, []int{1}, st.fired(faults.ArtifactUploadStall), "the store stalled once")
	tries, lastFailure := st.activityTries(run, "HostPhase2ToDisk")
	assert.Equal(t, 2, tries, "the stalled try, then the one that sent it again")
	assert.Contains(t, lastFailure, "took no bytes of phase 2 and gave no answer")
}

// fired are the Fired counts of fleetsim's faults of kind that fired.
func (st *mgsStack) fired(kind faults.Kind) []int {
	st.t.Helper()
	resp, err := http.Get(st.sim.URL + "/faults/fired")
	require.NoError(st.t, err)
	defer resp.Body.Close()
	var all []faults.Fault
	require.NoError(st.t, json.NewDecoder(resp.Body).Decode(&all))
	var out []int
	for _, f := range all {
		if f.Kind == kind {
			out = append(out, f.Fired)
		}
	}
	return out
}

// activityTries is the try of run's activity typ that ended it (its
// started event's attempt) and the failure of the try before.
func (st *mgsStack) activityTries(run client.WorkflowRun, typ string) (int, string) {
	st.t.Helper()
	iter := st.env.Client.GetWorkflowHistory(context.Background(), run.GetID(), run.GetRunID(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled := map[int64]bool{}
	tries, last := 0, ""
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(st.t, err)
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == typ {
			scheduled[e.GetEventId()] = true
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] {
			tries, last = int(a.GetAttempt()), a.GetLastFailure().GetMessage()
		}
	}
	return tries, last
}
