package mgsupdate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// The workflow is cancelled while the start is sending the image, and MGS
// accepts our update ID after the cancel: the cancellation waits for the
// start to end and then aborts our update by its ID.
func TestSPFirmwareCancelDuringStartAbortsOurUpdate(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSStartUpdate", func(ctx context.Context, in StartUpdateInput) (StartUpdateResult, error) {
		m.env.CancelWorkflow()
		<-ctx.Done()
		// The image was already on its way: the SP took it.
		return StartUpdateResult{Started: true, MGS: "mgs/0"}, nil
	})
	_, err := m.runSP(spInput())
	var ce *temporal.CanceledError
	require.ErrorAs(t, err, &ce)
	require.Len(t, m.starts, 1)
	require.Len(t, m.aborts, 1, "the update MGS accepted is aborted")
	assert.Equal(t, m.starts[0].UpdateID, m.aborts[0].UpdateID)
	assert.Equal(t, ledger.StateCancelled, m.lastFinish().State)
}

// Attempts 2..N precheck again (docs/CONFORMANCE.md §B): when the SP already runs
// the target after a failed attempt, nothing is sent again.
func TestSPFirmwarePrechecksEveryAttempt(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSPrecheck", precheckAt("1.0.0", "0.9.0"), precheckAt("1.1.0", "1.0.0"))
	m.script("MGSWaitUpdate", waitDone(WaitLost), waitDone(WaitComplete))
	res, err := m.runSP(spInput())
	require.NoError(t, err)
	assert.Equal(t, MGSOutcomeNoChangeNeeded, res.Outcome)
	assert.Len(t, m.starts, 1, "the second attempt found the target active and sent nothing")
	assert.Equal(t, 2, m.count("MGSPrecheck"))
}

// A cancel while the SP is reset to activate our complete update: a
// complete update cannot be aborted, and left unactivated the next reset
// by anyone would activate it. The reset is followed to its end and the
// update ends completed, the cancel noted (chaos seed 3: the ledger said
// cancelled while the SP ran the new version).
func TestSPFirmwareCancelDuringResetFinishesTheActivation(t *testing.T) {
	m := newMGSTest(t)
	m.script("SPPostUpdate", func(ctx context.Context, in PostUpdateInput) (PostUpdateResult, error) {
		m.env.CancelWorkflow()
		<-ctx.Done()
		return PostUpdateResult{}, ctx.Err()
	}, func(_ context.Context, in PostUpdateInput) (PostUpdateResult, error) {
		return PostUpdateResult{Outcome: PostActivated, Active: in.TargetVersion, Resets: 1}, nil
	})
	res, err := m.runSP(spInput())
	require.NoError(t, err)
	assert.Equal(t, MGSOutcomeCompletedUpdate, res.Outcome)
	assert.True(t, res.CancelIgnored)
	assert.Len(t, m.posts, 2, "the reset was followed to its end")
	assert.Empty(t, m.aborts, "a complete update is not aborted")
	f := m.lastFinish()
	assert.Equal(t, ledger.StateCompleted, f.State)
	assert.Equal(t, MGSOutcomeCompletedUpdate, f.Outcome)
}
