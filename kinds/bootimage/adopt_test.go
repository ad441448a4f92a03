package bootimage

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// deadRun is a terminated bump's changes as the ledger hands them over:
// ms-a and ms-b patched (now golden, so up to date for this run), ms-a
// scaled 1 -> 2 for its canary.
func deadRun(f *fakeCluster) {
	dead := uuid.New()
	f.images["ms-a"], f.images["ms-b"] = f.golden, f.golden
	f.add("ms-a", machineapi.ActionUpToDate, "")
	f.add("ms-b", machineapi.ActionUpToDate, "")
	f.adopted = []BootImageChange{
		{MachineSet: "ms-a", Change: ledger.BootImageChangeImage, Previous: ami("ami-old"), Applied: ami("ami-new"), AdoptedFrom: dead},
		{MachineSet: "ms-a", Change: ledger.BootImageChangeScale, PreviousReplicas: 1, ScaledReplicas: 2, AdoptedFrom: dead},
		{MachineSet: "ms-b", Change: ledger.BootImageChangeImage, Previous: ami("ami-old-b"), Applied: ami("ami-new"), AdoptedFrom: dead},
	}
	f.baseline = 2 // the dead run's canary machine is still there
}

// A bump that adopted a terminated bump's changes proves them with its
// canary (it patched nothing itself); the canary fails and the rollback
// restores every MachineSet the dead run changed: its own canary first,
// then the dead run's patches and scale-up.
func TestBootImageBumpCanaryFailureUndoesAdoptedChanges(t *testing.T) {
	f := newFake()
	deadRun(f)
	f.canary = CanaryResult{Machine: "m-1", Phase: "Provisioned", Detail: "still Provisioned at the deadline"}
	in := bumpInput()
	in.Canary = &BootImageCanary{}
	res, err := runBump(t, f.env(t), in)
	requireCanaryFailed(t, err)
	require.NotNil(t, res.Canary)
	assert.Equal(t, "ms-a", res.Canary.MachineSet, "adopted patches are proven by a canary")
	assert.Len(t, res.Adopted, 3)
	assert.Equal(t, ami("ami-old"), f.images["ms-a"])
	assert.Equal(t, ami("ami-old-b"), f.images["ms-b"])
	assert.Equal(t, [][2]int32{{2, 3}, {3, 2}, {2, 1}}, f.scales, "own canary up and down, then the dead run's down")
	assert.Equal(t, []BootImageChange{{MachineSet: "ms-a", Change: ledger.BootImageChangeScale, PreviousReplicas: 2, ScaledReplicas: 3}},
		f.changes, "this run's own change, recorded before it")
}

// A cancel undoes the adopted changes too; a bump whose canary joins keeps
// the adopted patches (they are proven) and scales the dead run's canary
// back down (a proof, not capacity).
func TestBootImageBumpAdoptedChangesOnCancelAndSuccess(t *testing.T) {
	f := newFake()
	deadRun(f)
	f.add("ms-c", machineapi.ActionPatch, "")
	f.images["ms-c"] = ami("ami-old")
	env := f.env(t)
	in := bumpInput()
	in.SettleInterval = time.Hour
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	res, err := runBump(t, env, in)
	require.Error(t, err)
	assert.True(t, temporal.IsCanceledError(err), "%v", err)
	for _, ms := range []string{"ms-a", "ms-c"} {
		assert.Equal(t, ami("ami-old"), f.images[ms], ms)
	}
	assert.Equal(t, ami("ami-old-b"), f.images["ms-b"])
	assert.Equal(t, [][2]int32{{2, 1}}, f.scales, "the dead run's canary scaled down")
	assert.Len(t, res.Restored, 4)

	f = newFake()
	deadRun(f)
	in = bumpInput()
	in.Canary = &BootImageCanary{}
	res, err = runBump(t, f.env(t), in)
	require.NoError(t, err)
	assert.True(t, res.Canary.Joined)
	assert.Empty(t, f.restores)
	assert.Equal(t, f.golden, f.images["ms-b"])
	assert.Equal(t, [][2]int32{{2, 3}, {3, 2}, {2, 1}}, f.scales, "its own canary, then the dead run's back down")
}
