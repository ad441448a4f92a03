package mgsupdate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// startActivity is the SP firmware's start step (it also waits for the
// delivery), the step an operator finds running while the SP receives
// the image.
const startActivity = "MGSStartUpdate"

// toolWithin bounds the wait for the start step to run on a worker.
const toolWithin = 30 * time.Second

// An operator completes the SP firmware start by hand (`temporal activity
// complete --result`) while the SP receives our image, with a result they
// typed: empty, made up, or one naming another update. The workflow does
// not act on it: the rejection is in the ledger and the start is asked
// again, which finds our update on the SP by its send record and follows
// it. The SP got our image once, was reset once (to activate it) and runs
// it; the update ends completed in its one attempt.
func TestSPFirmwareTypedStartResultIsRejected(t *testing.T) {
	other := uuid.New()
	for _, c := range []struct{ name, result string }{
		{"empty", `{}`},
		{"not-json", `done`},
		{"made-up", `{"started":true,"wait":{"outcome":"complete"}}`},
		{"another-update", `{"started":true,"updateId":"` + other.String() + `","wait":{"outcome":"complete","updateId":"` + other.String() + `"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			const cubby = 1
			st := newMGSStack(t, func(s *spec.Spec) {
				s.Timings.FlashBytesPerSecond = 1 << 10 // ×100: 256 KiB in 2.5 s to type in
			})
			run := st.startWF(workflows.KindSPFirmware, st.spInput(cubby, "1.1.0"), mgsupdate.SPFirmwareUpdate)
			st.awaitDelivering(cubby)
			st.typeResult(run, c.result)

			res := st.requireRunUpdatedOnce(run, cubby)
			st.requireRejected(res.AttemptIDs[0], startActivity)
			if c.name == "empty" {
				replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/sp-firmware-typed-start-result.json")
			}
		})
	}
}

// An operator fails the SP firmware start by hand (`temporal activity
// fail`, non-retryable as the CLI sends it) while the SP receives our
// image. The update fails as for a real failure of the step: its
// compensation aborts our update on the SP (something was sent), nothing
// is reset, and the ledger's one attempt is failed.
func TestSPFirmwareOperatorFailedStartAbortsTheDelivery(t *testing.T) {
	const cubby = 1
	st := newMGSStack(t, func(s *spec.Spec) {
		s.Timings.FlashBytesPerSecond = 1 << 10 // ×100: 256 KiB in 2.5 s to fail it in
	})
	run := st.startWF(workflows.KindSPFirmware, st.spInput(cubby, "1.1.0"), mgsupdate.SPFirmwareUpdate)
	st.awaitDelivering(cubby)
	pa := testenv.RunningActivity(t, st.env.Client, run.GetID(), startActivity, toolWithin)
	testenv.FailActivity(t, st.env.Client, run.GetID(), pa.GetActivityId(), errors.New("operator: stop this delivery"))

	_, err := st.result(run)
	require.Error(t, err, "a failed start fails the update")
	tr := st.truth(cubby)
	assert.Equal(t, spec.GeneratedSPActive, tr.SP.Active.Version)
	require.Len(t, tr.Deliveries, 1, "our image was sent once: %+v", tr.Deliveries)
	assert.Equal(t, "aborted", tr.Deliveries[0].Outcome, "the compensation aborted our update")
	assert.Zero(t, tr.Resets, "nothing was activated")
	atts, err := st.env.Store.Attempts(context.Background(), run.GetID())
	require.NoError(t, err)
	require.Len(t, atts, 1, "no second attempt: %+v", atts)
	assert.Equal(t, ledger.StateFailed, atts[0].State)
	st.checkTargetFree(st.spInput(cubby, "1.1.0").Target())
}

// An operator types a result for the start again and again: after
// maxRejectedResults the update fails ResultRejected (its compensation
// aborts our update), never a second delivery or a reset.
func TestSPFirmwareRepeatedTypedStartResultsFailTheUpdate(t *testing.T) {
	const cubby = 1
	st := newMGSStack(t, func(s *spec.Spec) {
		s.Timings.FlashBytesPerSecond = 1 << 8 // ×100: 256 KiB in 10 s to type in, three times
	})
	run := st.startWF(workflows.KindSPFirmware, st.spInput(cubby, "1.1.0"), mgsupdate.SPFirmwareUpdate)
	st.awaitDelivering(cubby)
	for range mgsupdate.MaxRejectedResults {
		st.typeResult(run, `{}`)
	}

	st.requireFailedWith(run, failure.ResultRejected)
	tr := st.truth(cubby)
	assert.Equal(t, spec.GeneratedSPActive, tr.SP.Active.Version)
	require.Len(t, tr.Deliveries, 1, "our image was sent once: %+v", tr.Deliveries)
	assert.Zero(t, tr.Resets)
	atts, err := st.env.Store.Attempts(context.Background(), run.GetID())
	require.NoError(t, err)
	require.Len(t, atts, 1, "%+v", atts)
	assert.Equal(t, ledger.StateFailed, atts[0].State)
}

// typeResult completes run's running start step with result, as
// `temporal activity complete --activity-id --result` does, and waits
// until the workflow has taken it (the step runs again, or the run ends).
func (st *mgsStack) typeResult(run client.WorkflowRun, result string) {
	st.t.Helper()
	pa := testenv.RunningActivity(st.t, st.env.Client, run.GetID(), startActivity, toolWithin)
	testenv.CompleteActivity(st.t, st.env.Client, run.GetID(), pa.GetActivityId(), result)
	require.Eventually(st.t, func() bool {
		next := testenv.PendingActivity(st.t, st.env.Client, run.GetID(), startActivity)
		return next == nil || next.GetActivityId() != pa.GetActivityId()
	}, toolWithin, 20*time.Millisecond, "the workflow never took the typed result")
}

// requireRejected: the attempt's ledger log shows a rejected result of
// the activity named.
func (st *mgsStack) requireRejected(attempt, activity string) {
	st.t.Helper()
	evs, err := st.env.Store.Events(context.Background(), uuid.MustParse(attempt))
	require.NoError(st.t, err)
	for _, e := range evs {
		if strings.HasPrefix(e.Step, "result-rejected") && strings.Contains(e.Step+" "+e.Message, activity) {
			return
		}
	}
	assert.Fail(st.t, "no result-rejected event for "+activity, "%+v", evs)
}
