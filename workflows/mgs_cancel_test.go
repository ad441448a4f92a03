package workflows

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// The workflow is cancelled while the start is sending the image, and MGS
// accepts our update ID after the cancel: the cancellation waits for the
// start to end and then aborts our update by its ID.
func TestSPFirmwareCancelDuringStartAbortsOurUpdate(t *testing.T) {
	m := newMGSTest(t)
	m.script("MGSStartUpdate", func(ctx context.Context, in activities.StartUpdateInput) (activities.StartUpdateResult, error) {
		m.env.CancelWorkflow()
		<-ctx.Done()
		// The image was already on its way: the SP took it.
		return activities.StartUpdateResult{Started: true, MGS: "mgs/0"}, nil
	})
	_, err := m.runSP(spInput())
	var ce *temporal.CanceledError
	require.ErrorAs(t, err, &ce)
	require.Len(t, m.starts, 1)
	require.Len(t, m.aborts, 1, "the update MGS accepted is aborted")
	assert.Equal(t, m.starts[0].UpdateID, m.aborts[0].UpdateID)
	assert.Equal(t, ledger.StateCancelled, m.lastFinish().State)
}
