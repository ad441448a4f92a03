package bootimage_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// With the MCO's boot image controller on, a vSphere cluster's opted-in
// MachineSets are the MCO's: it imports the OVA and names the template
// itself (machine-config-operator pkg/controller/bootimage/vsphere_helpers.go,
// createNewVMTemplate). fleetsaga's refusal to import ("let the MCO manage
// this MachineSet") must not fail a MachineSet the MCO already manages: the
// bump reports it as the MCO's, as it does on AWS
// (TestBumpLeavesMCOManagedMachineSetsToTheMCO).
func TestBumpLeavesMCOManagedVSphereMachineSetsToTheMCO(t *testing.T) {
	c := spec.SampleCluster("c1", spec.PlatformVSphere, false)
	c.MCO = spec.On()
	e := setup(t, c)
	e.worker()
	res, err := e.wait(e.start(fastInput()))
	require.NoError(t, err, "%+v", res)
	assert.Equal(t, "mco", res.Owner)
	assert.Equal(t, []string{"c1-worker-a", "c1-worker-b"}, res.MCOManaged)
	assert.Empty(t, res.Failed, "MachineSets the MCO manages were failed as needing an import fleetsaga does not do")
	assert.Empty(t, res.Patched)
}
