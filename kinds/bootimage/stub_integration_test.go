package bootimage_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// The MCO converts a user-data Ignition stub older than spec 3 before it
// patches a MachineSet (machine-config-operator
// pkg/controller/bootimage/helpers.go, upgradeStubIgnitionIfRequired): a new
// boot image cannot read a spec 2 stub. fleetsaga does not convert one, so
// it refuses each such MachineSet with a reason and patches none of them.
func TestBumpRefusesMachineSetsWithASpec2IgnitionStub(t *testing.T) {
	c := unmanaged(spec.SampleCluster("c1", spec.PlatformAWS, false))
	c.StubIgnitionVersion = "2.2.0"
	e := setup(t, c)
	e.worker()
	res, err := e.wait(e.start(fastInput()))
	require.Error(t, err, "refused MachineSets fail the bump")
	assert.Empty(t, res.Patched)
	var failed []string
	for _, f := range res.Failed {
		failed = append(failed, f.MachineSet)
		assert.Equal(t, string(machineapi.ReasonIgnitionStub), f.Reason, f.MachineSet)
		assert.Contains(t, f.Detail, `Ignition stub of spec "2.2.0"`, f.MachineSet)
	}
	assert.Equal(t, []string{"c1-worker-a", "c1-worker-b"}, failed)
	tr := e.truth()
	for _, name := range failed {
		assert.Zero(t, tr.MachineSets[name].ImagePatches, name)
	}
}
