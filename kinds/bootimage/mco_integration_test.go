package bootimage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// With the MCO's boot image controller on, the opted-in
// MachineSets are the MCO's. The bump never patches them: it reports them
// (owner "mco"), and where the operator asks (AwaitMCO) waits for and
// verifies the MCO's reconciliation; the skew rule is still enforced. Every
// patch the MachineSets got is the MCO's, and the MCO's hot-loop guard never
// tripped (no second writer).
func TestBumpLeavesMCOManagedMachineSetsToTheMCO(t *testing.T) {
	c := spec.SampleCluster("c1", spec.PlatformAWS, false)
	c.MCO = spec.On() // today's default, said here
	c.Upgrading = true
	c.UpgradeCompletesAfter = spec.Duration{Duration: 20 * time.Minute} // 1 s
	c.GoldenStampedRelease = spec.SampleMidRelease
	c.GoldenStampAfter = spec.Duration{Duration: 40 * time.Minute} // 2 s
	e := setup(t, c)
	e.worker()
	in := fastInput()
	in.Release = spec.SampleCurrentRelease
	in.AwaitMCO = true
	in.PreconditionTimeout = time.Minute
	run := e.start(in)
	res, err := e.wait(run)
	require.NoError(t, err, "%+v", res)
	replay.Record(t, e.Client, run.GetID(), run.GetRunID(), "../testdata/histories/bootimage-mco-managed.json")

	sets := []string{"c1-worker-a", "c1-worker-b"}
	assert.Equal(t, "mco", res.Owner)
	assert.Equal(t, sets, res.MCOManaged)
	assert.Empty(t, res.Patched, "fleetsaga patched a MachineSet the MCO manages")
	assert.Equal(t, sets, res.MCOReconciled, "the MCO brought them to the golden image")
	assert.Empty(t, res.Failed)
	assert.True(t, res.Skew.Checked, "the skew rule is still enforced")

	tr := e.truth()
	require.NotNil(t, tr.MCO)
	assert.Empty(t, tr.MCO.Refused, "the MCO's hot-loop guard tripped: a second writer")
	for _, ms := range sets {
		assert.Equal(t, golden.Images["amd64"].AWS["us-east-1"], tr.MachineSets[ms].Image, ms)
		assert.Positive(t, tr.MCO.Patches[ms], "%s: the MCO patched it", ms)
		assert.Zero(t, tr.MachineSets[ms].ImagePatches, "%s: a client patched it through the API", ms)
	}
	at := e.attempt(run)
	assert.Equal(t, ledger.StateCompleted, at.State)
	changes, err := e.Store.BootImageChanges(context.Background(), at.ID)
	require.NoError(t, err)
	assert.Empty(t, changes, "fleetsaga recorded no change of its own")
	evs, err := e.Store.Events(context.Background(), at.ID)
	require.NoError(t, err)
	var owner string
	for _, ev := range evs {
		if strings.HasSuffix(ev.Step, "-owner") {
			owner = ev.Message
		}
	}
	assert.Contains(t, owner, "the MCO's boot image controller owns the opted-in MachineSets")
}

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

// The MCO asks EC2 about its own MachineSets; fleetsaga, which cannot use
// STS credentials, does not need to: an STS cluster whose MachineSets are
// all the MCO's plans and ends fine.
func TestBumpOfAnSTSClusterTheMCOManagesNeedsNoEC2(t *testing.T) {
	c := spec.SampleCluster("c1", spec.PlatformAWS, false)
	c.MCO = spec.On()
	c.AWSCredentials = spec.AWSCredentialsSTS
	e := setup(t, c)
	e.worker()
	res, err := e.wait(e.start(fastInput()))
	require.NoError(t, err, "%+v", res)
	assert.Equal(t, "mco", res.Owner)
	assert.Equal(t, []string{"c1-worker-a", "c1-worker-b"}, res.MCOManaged)
	assert.Empty(t, res.Failed)
}
