package mgsupdate_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Chaos seed 3: the operator cancels an SP update while the SP is reset to
// activate it (phase post-update). The update was complete on the SP and
// cannot be aborted: the reset is followed to its end, fleetsim's SP runs
// the new version, and the ledger agrees (completed, not cancelled); the
// result says the cancel was ignored. Recorded: the cancel path's history.
func TestSPFirmwareCancelledDuringResetEndsCompletedOnFleetsim(t *testing.T) {
	const cubby = 2
	st := newMGSStack(t, func(s *spec.Spec) {
		s.Timings.SPResetTime = spec.Duration{Duration: 3 * time.Minute} // ×100: 1.8 s to cancel in
	})
	in := st.spInput(cubby, "1.1.0")
	run := st.startWF(workflows.KindSPFirmware, in, mgsupdate.SPFirmwareUpdate)
	st.cancelInPhase(run, mgsupdate.MGSPhasePostUpdate) // complete; the SP is being reset

	res, err := st.result(run)
	require.NoError(t, err, "an SP update cancelled during its activation ends completed")
	assert.Equal(t, mgsupdate.MGSOutcomeCompletedUpdate, res.Outcome)
	assert.True(t, res.CancelIgnored)
	tr := st.truth(cubby)
	assert.Equal(t, "1.1.0", tr.SP.Active.Version)
	assert.Equal(t, 1, tr.Resets, "one reset, not repeated by the second post-update")
	st.checkLedgerAgrees(run, cubby, res)
	replay.Record(t, st.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/sp-firmware-cancel-during-reset.json")
}
