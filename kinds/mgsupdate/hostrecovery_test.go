package mgsupdate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// recoveryTest is mgsTest with the recovery's own activities scripted:
// the recovery boot's setup, the fetch, the undo.
type recoveryTest struct {
	*mgsTest
	boots    []HostPostUpdateInput
	fetches  []HostWaitBootInput
	restores []HostRecoveryRestoreInput
}

func newRecoveryTest(t *testing.T) *recoveryTest {
	r := &recoveryTest{mgsTest: newMGSTest(t)}
	r.env.RegisterWorkflow(HostRecovery)
	r.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"))
	r.script("HostPostUpdate", func(context.Context, HostPostUpdateInput) error { return nil })
	r.script("HostWaitBoot", func(context.Context, HostWaitBootInput) (HostWaitBootResult, error) {
		return HostWaitBootResult{Booted: true, Offset: 100, Total: 100}, nil
	})
	r.script("HostRecoveryRestore", func(context.Context, HostRecoveryRestoreInput) error { return nil })
	r.env.OnActivity(r.a.HostPostUpdate, mock.Anything, mock.Anything).Return(func(ctx context.Context, in HostPostUpdateInput) error {
		r.mu.Lock()
		r.boots = append(r.boots, in)
		r.mu.Unlock()
		return r.next("HostPostUpdate").(func(context.Context, HostPostUpdateInput) error)(ctx, in)
	}).Maybe()
	r.env.OnActivity(r.a.HostWaitBoot, mock.Anything, mock.Anything).Return(func(ctx context.Context, in HostWaitBootInput) (HostWaitBootResult, error) {
		r.mu.Lock()
		r.fetches = append(r.fetches, in)
		r.mu.Unlock()
		return call[HostWaitBootInput, HostWaitBootResult](r.mgsTest, "HostWaitBoot", ctx, in)
	}).Maybe()
	r.env.OnActivity(r.a.HostRecoveryRestore, mock.Anything, mock.Anything).Return(func(ctx context.Context, in HostRecoveryRestoreInput) error {
		r.mu.Lock()
		r.restores = append(r.restores, in)
		r.mu.Unlock()
		return r.next("HostRecoveryRestore").(func(context.Context, HostRecoveryRestoreInput) error)(ctx, in)
	}).Maybe()
	return r
}

func recoveryInput() HostRecoveryInput {
	h := hostInput()
	return HostRecoveryInput{Sled: h.Sled, Phase1: h.Phase1, Phase2: h.Phase2, Timing: h.Timing}
}

func (r *recoveryTest) run() (MGSUpdateResult, error) {
	r.env.ExecuteWorkflow(HostRecovery, recoveryInput())
	require.True(r.t, r.env.IsWorkflowCompleted())
	var res MGSUpdateResult
	err := r.env.GetWorkflowError()
	if err == nil {
		require.NoError(r.t, r.env.GetWorkflowResult(&res))
	}
	return res, err
}

// In order: the trampoline's phase 1 to the inactive slot, the recovery
// boot on that slot for one boot only, the fetch followed by the phase 2's
// ID at MGS in one activity (no checkpoints: progress comes by signal);
// nothing undone after the boot.
func TestHostRecoveryHappyPath(t *testing.T) {
	r := newRecoveryTest(t)
	res, err := r.run()
	require.NoError(t, err)
	assert.Equal(t, MGSOutcomeCompletedUpdate, res.Outcome)
	require.Len(t, r.starts, 1)
	assert.Equal(t, mgs.ComponentHostBootFlash, r.starts[0].Component)
	assert.Equal(t, uint16(0), r.starts[0].FirmwareSlot, "the trampoline goes to the inactive slot")
	require.Len(t, r.boots, 1)
	assert.Equal(t, uint16(0), r.boots[0].NewSlot)
	assert.True(t, r.boots[0].Transient, "the trampoline's slot is never persisted")
	assert.Equal(t, tSHA2, r.boots[0].Phase2.SHA256)
	require.Len(t, r.fetches, 1, "one activity follows the whole fetch")
	assert.True(t, r.fetches[0].Transient)
	assert.Equal(t, tPhase2ID, r.fetches[0].Phase2ID, "followed by the phase 2's ID at MGS")
	assert.Zero(t, r.fetches[0].CheckpointEvery)
	assert.Empty(t, r.restores, "nothing to undo once the host booted")
	assert.Empty(t, r.hostBoots, "no sled-agent boot of the rack's path")
	assert.Empty(t, r.phase2s, "no phase 2 to disk")
}

// A cancel while the trampoline's phase 1 is written aborts our update
// and ends cancelled; the host is not touched.
func TestHostRecoveryCancelWhileWritingAbortsOnly(t *testing.T) {
	r := newRecoveryTest(t)
	r.script("MGSWaitUpdate", func(context.Context, WaitUpdateInput) (WaitUpdateResult, error) {
		r.env.CancelWorkflow()
		return WaitUpdateResult{}, temporal.NewCanceledError("stopped by the cancel")
	})
	_, err := r.run()
	var ce *temporal.CanceledError
	require.ErrorAs(t, err, &ce)
	require.Len(t, r.aborts, 1)
	assert.Empty(t, r.boots, "no recovery boot")
	assert.Empty(t, r.restores)
	assert.Equal(t, ledger.StateCancelled, r.lastFinish().State)
}

// A cancel during the recovery boot's setup or during the fetch: the undo
// clears recovery mode and puts the next boot on the installed slot (the
// one active at the precheck); the update ends cancelled saying so.
func TestHostRecoveryCancelAfterTheRecoveryBootUndoes(t *testing.T) {
	for _, step := range []string{"HostPostUpdate", "HostWaitBoot"} {
		t.Run(step, func(t *testing.T) {
			r := newRecoveryTest(t)
			switch step {
			case "HostPostUpdate":
				r.script(step, func(context.Context, HostPostUpdateInput) error {
					r.env.CancelWorkflow()
					return temporal.NewCanceledError("stopped by the cancel")
				})
			default:
				r.script(step, func(context.Context, HostWaitBootInput) (HostWaitBootResult, error) {
					r.env.CancelWorkflow()
					return HostWaitBootResult{}, temporal.NewCanceledError("stopped by the cancel")
				})
			}
			_, err := r.run()
			var ce *temporal.CanceledError
			require.ErrorAs(t, err, &ce)
			require.Len(t, r.restores, 1)
			assert.Equal(t, uint16(1), r.restores[0].Installed, "the next boot on the installed slot")
			f := r.lastFinish()
			assert.Equal(t, ledger.StateCancelled, f.State)
			assert.Contains(t, f.Error, "recovery mode cleared; the next boot uses slot 1, the installed OS")
		})
	}
}

// A fetch that does not end in time fails HostBootTimeout, and the undo
// runs.
func TestHostRecoveryBootTimeoutUndoes(t *testing.T) {
	r := newRecoveryTest(t)
	r.script("HostWaitBoot", func(context.Context, HostWaitBootInput) (HostWaitBootResult, error) {
		return HostWaitBootResult{}, temporal.NewNonRetryableApplicationError("no boot", failure.HostBootTimeout, nil)
	})
	_, err := r.run()
	var ae *temporal.ApplicationError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, failure.HostBootTimeout, ae.Type())
	require.Len(t, r.restores, 1)
	assert.Equal(t, ledger.StateFailed, r.lastFinish().State)
}

// Input checks: a host is on a sled; the trampoline's images are one
// release's pair.
func TestHostRecoveryInputContract(t *testing.T) {
	in := recoveryInput()
	require.NoError(t, in.Validate())
	assert.Equal(t, "sp/sled/2", in.Target())
	bad := in
	bad.Sled.Type = mgs.SpTypeSwitch
	assert.ErrorContains(t, bad.Validate(), "only sled SPs have a host")
	bad = in
	bad.Phase2.Version = "3.0.0"
	assert.ErrorContains(t, bad.Validate(), "not one release's pair")
	bad = in
	bad.Timing.MaxAttempts = -1
	assert.Error(t, bad.Validate())
}
