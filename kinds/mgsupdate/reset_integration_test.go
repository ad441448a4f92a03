package mgsupdate_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

var (
	resetFirst, resetLast = testenv.ResetFirst, testenv.ResetLast
	resetPoints           = testenv.ResetPoints
	resetWorkflow         = testenv.ResetWorkflow
)

type resetPoint = testenv.ResetPoint

// An operator resets an SP firmware update while the SP receives its image,
// to each point. The reset run derives the same attempt ID, takes its
// attempt over in the ledger and recognises its own update on the SP: the
// update ends completed, the SP received our image once and runs it, and
// the ledger's one attempt is the delivered update, ended; nothing is left
// active on the target. (Before attempt IDs were derived from the original
// run ID, the reset run took its own update for a foreign one.)
func TestSPFirmwareResetMidDelivery(t *testing.T) {
	for _, p := range resetPoints {
		t.Run(string(p), func(t *testing.T) {
			const cubby = 1
			st := newMGSStack(t, func(s *spec.Spec) {
				s.Timings.FlashBytesPerSecond = 1 << 10 // ×100: 256 KiB in 2.5 s to reset in
			})
			run := st.startWF(workflows.KindSPFirmware, st.spInput(cubby, "1.1.0"), mgsupdate.SPFirmwareUpdate)
			st.awaitDelivering(cubby)
			reset := resetWorkflow(t, st.env.Client, run.GetID(), p)

			res, err := st.result(reset)
			require.NoError(t, err)
			assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
			tr := st.truth(cubby)
			assert.Equal(t, "1.1.0", tr.SP.Active.Version)
			require.Len(t, tr.Deliveries, 1, "our image was sent once: %+v", tr.Deliveries)
			assert.Equal(t, res.AttemptIDs, []string{tr.Deliveries[0].UpdateID.String()})
			st.checkLedgerAgrees(reset, cubby, res)
			st.checkTargetFree(st.spInput(cubby, "1.1.0").Target())
			if p == resetFirst {
				replay.Record(t, st.env.Client, reset.GetID(), reset.GetRunID(), "../testdata/histories/sp-firmware-reset-first-task.json")
			}
		})
	}
}

// awaitDelivering waits until the SP receives an update of ours.
func (st *mgsStack) awaitDelivering(cubby int) {
	st.t.Helper()
	require.Eventually(st.t, func() bool {
		for _, d := range st.truth(cubby).Deliveries {
			if d.Outcome == "in_progress" && d.Bytes > 0 {
				return true
			}
		}
		return false
	}, 60*time.Second, 10*time.Millisecond, "no delivery started on sp/sled/%d", cubby)
}

// requireResetRunBooted: a reset host update (flash or recovery)
// completed with the host running its new phase 2, our phase 1 sent once
// across both runs, the ledger agreeing and nothing left active on target.
// It returns the SP's truth for the kind's own checks.
func (st *mgsStack) requireResetRunBooted(reset client.WorkflowRun, cubby int, target string, phase2 mgsupdate.Artifact) simmgs.SPTruth {
	st.t.Helper()
	res, err := st.result(reset)
	require.NoError(st.t, err)
	assert.Equal(st.t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	tr := st.truth(cubby)
	assert.Equal(st.t, simmgs.HostRunning, tr.Host.State)
	assert.Equal(st.t, phase2ID(st.t, phase2.Path), tr.Host.BootedPhase2)
	require.Len(st.t, tr.Deliveries, 1, "our phase 1 was sent once: %+v", tr.Deliveries)
	st.checkLedgerAgrees(reset, cubby, res)
	st.checkTargetFree(target)
	return tr
}

// checkTargetFree: no attempt is left active on target.
func (st *mgsStack) checkTargetFree(target string) {
	st.t.Helper()
	active, err := st.env.Store.ActiveForTarget(context.Background(), target)
	require.NoError(st.t, err)
	assert.Nil(st.t, active, "an attempt is left active on %s", target)
}

// An operator resets a rollout while its SP firmware update delivers, to
// the rollout's first workflow task (it starts its stage again) and to its
// last one. The update runs once: the rollout ends with it completed, the
// SP got our image once and runs it, and the ledger agrees.
func TestRolloutResetWhileItsUpdateRuns(t *testing.T) {
	for i, p := range []resetPoint{resetFirst, resetLast} {
		t.Run(string(p), func(t *testing.T) {
			cubby := 2 + i // the update's workflow ID is the target's: one per subtest
			st := newMGSStack(t, func(s *spec.Spec) {
				s.Timings.FlashBytesPerSecond = 1 << 10 // ×100: 256 KiB in 2.5 s to reset in
			})
			upd := st.spInput(cubby, "1.1.0")
			raw, err := json.Marshal(upd)
			require.NoError(t, err)
			in := rollout.RolloutInput{Name: "reset-" + st.env.TaskQueue, Stages: []rollout.Stage{{
				Name: "sp", Kind: workflows.KindSPFirmware, Concurrency: 1,
				Updates: []rollout.PlanUpdate{{Target: upd.Target(), Artifact: upd.Artifact.Version, Input: raw}},
			}}}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			run, err := st.env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
				ID: rollout.RolloutWorkflowID(in.Name), TaskQueue: st.env.TaskQueue}, rollout.Rollout, in)
			require.NoError(t, err)
			st.awaitDelivering(cubby)
			reset := resetWorkflow(t, st.env.Client, run.GetID(), p)

			var res rollout.RolloutResult
			require.NoError(t, reset.Get(ctx, &res))
			require.Len(t, res.Outcomes, 1)
			out := res.Outcomes[0]
			assert.Equal(t, workflows.StateCompleted, out.State, "%+v", out)
			tr := st.truth(cubby)
			assert.Equal(t, "1.1.0", tr.SP.Active.Version)
			assert.Len(t, completed(tr.Deliveries), 1, "our image was delivered once: %+v", tr.Deliveries)
			st.checkTargetFree(upd.Target())
		})
	}
}

// An operator resets a host flash while the SP receives phase 1, to each
// point: the reset run adopts its attempt, never sends it again, and the
// host boots the new image; the flash got our phase 1 once, and nothing is
// left active on the sled.
func TestHostFlashResetMidDelivery(t *testing.T) {
	for i, p := range resetPoints {
		t.Run(string(p), func(t *testing.T) {
			cubby := 1 + i // the update's workflow ID is unique per test, its target need not be
			st := newMGSStack(t, func(s *spec.Spec) {
				s.Timings.FlashBytesPerSecond = 1 << 8 // ×100: 64 KiB in 2.5 s to reset in
			})
			in := st.hostInput(cubby)
			run := st.startWF(workflows.KindHostFlash, in, mgsupdate.HostBootFlashUpdate)
			st.awaitDelivering(cubby)
			reset := resetWorkflow(t, st.env.Client, run.GetID(), p)

			st.requireResetRunBooted(reset, cubby, in.Target(), in.Phase2)
		})
	}
}

// Chaos seed 1: an SP update whose first attempt was lost (the SP reset
// mid-delivery) is reset to its first workflow task while its second
// attempt runs. The reset run derives attempt 1's ID again, finds it
// ended, and takes attempt 2 over (its ID and its number) instead of
// leaving it active under the terminated run: the ledger ends with
// attempt 1 failed and attempt 2 completed, and each ID was sent once.
func TestSPFirmwareResetToStartAfterALostAttempt(t *testing.T) {
	const cubby = 1
	st := newMGSStack(t, func(s *spec.Spec) {
		s.Timings.FlashBytesPerSecond = 1 << 10 // ×100: 256 KiB in 2.5 s
	})
	st.arm(faults.Fault{Kind: faults.SPResetMidDelivery, Target: "sp/sled/1", AfterPercent: 20, Times: 1})
	run := st.startWF(workflows.KindSPFirmware, st.spInput(cubby, "1.1.0"), mgsupdate.SPFirmwareUpdate)
	require.Eventually(t, func() bool {
		ds := st.truth(cubby).Deliveries
		return len(ds) == 2 && ds[1].Bytes > 0
	}, time.Minute, 10*time.Millisecond, "the second attempt never started")
	reset := resetWorkflow(t, st.env.Client, run.GetID(), resetFirst)

	res, err := st.result(reset)
	require.NoError(t, err)
	tr := st.truth(cubby)
	assert.Equal(t, "1.1.0", tr.SP.Active.Version)
	seen := map[string]int{}
	for _, d := range tr.Deliveries {
		seen[d.UpdateID.String()]++
	}
	for id, n := range seen {
		assert.Equal(t, 1, n, "attempt %s sent %d times", id, n)
	}
	atts, err := st.env.Store.Attempts(context.Background(), run.GetID())
	require.NoError(t, err)
	require.Len(t, atts, 2, "%+v", atts)
	assert.Equal(t, ledger.StateFailed, atts[0].State)
	assert.Equal(t, ledger.StateCompleted, atts[1].State, "%+v (result %+v)", atts[1], res)
	st.checkTargetFree(st.spInput(cubby, "1.1.0").Target())
}
