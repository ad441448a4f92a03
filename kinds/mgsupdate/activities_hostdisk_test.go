package mgsupdate_test

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
)

func (m *mgsAct) sledTruth(cubby int) sled.SledTruth {
	id := m.spec.Racks[0].Sleds[cubby].ID
	for _, s := range m.sim.Truth()[sled.Name].(sled.Truth).Sleds {
		if s.ID == id {
			return s
		}
	}
	m.t.Fatalf("no sled %s", id)
	return sled.SledTruth{}
}

// The host disk and boot activities against fleetsim's sled-agent, every
// request and answer checked against the sled-agent document: phase 2 goes
// into the artifact store and onto the inactive slot's disk (once: a
// second run finds it there); booting that slot, whose phase 1 is paired
// with another phase 2, fails by the deadline (HostBootTimeout) after one
// SP reset; booting the old slot again brings sled-agent back on its disk.
func TestHostDiskAndBootActivitiesOnFleetsim(t *testing.T) {
	m := newMGSAct(t)
	sl := m.spec.Racks[0].Sleds[2]
	in := m.phase2ToDisk(t, sl, sl.ID)
	active := in.ActiveSlot
	_, err := m.env.ExecuteActivity(m.a.HostPhase2ToDisk, in)
	require.NoError(t, err)
	h := m.sledTruth(2).Host
	assert.Equal(t, in.Phase2.SHA256, h.Disks[1-active].Artifact)
	p2, err := os.ReadFile(in.Phase2.Path)
	require.NoError(t, err)
	assert.Equal(t, simmgs.Phase2ID(p2), h.Disks[1-active].Phase2)
	_, err = m.env.ExecuteActivity(m.a.HostPhase2ToDisk, in)
	require.NoError(t, err)
	assert.Equal(t, 1, m.sledTruth(2).Host.Disks[1-active].Writes, "a second run writes nothing")
	put := "PUT /sled-agent/" + sl.ID.String() + "/artifacts/" + in.Phase2.SHA256
	assert.Equal(t, 1, m.reqs.count(put), "the file is uploaded once")

	boot := mgsupdate.HostBootInput{SP: sled2, Serial: sl.Serial, SledID: sl.ID, Slot: 1 - active, Why: "activate",
		Deadline: time.Now().Add(2 * time.Second), PollInterval: 10 * time.Millisecond}
	_, err = m.env.ExecuteActivity(m.a.HostBootSlot, boot)
	require.Error(t, err)
	assert.Equal(t, failure.HostBootTimeout, mgsErrType(err), "%v", err)
	assert.Equal(t, 1, m.truth().Resets, "one reset, not repeated while waiting")
	assert.Equal(t, simmgs.HostPhase2Missing, m.truth().Host.State)

	boot.Slot, boot.Why, boot.Deadline = active, "restore", time.Now().Add(10*time.Second)
	_, err = m.env.ExecuteActivity(m.a.HostBootSlot, boot)
	require.NoError(t, err)
	assert.Equal(t, int(active), m.truth().Host.BootedSlot)
	assert.True(t, m.sledTruth(2).Host.Up)
	assert.Equal(t, 2, m.truth().Resets)
}

// A host flash slot is hashed as MGS's own client does it: started once,
// then polled about once a second, not in a tight loop (fleetsim's hash
// takes 1.5 s at this speed-up).
func TestHostSlotHashingIsPacedAtOneHertz(t *testing.T) {
	m := newMGSAct(t, func(s *spec.Spec) { s.SpeedUp = 2 })
	_, err := m.env.ExecuteActivity(m.a.MGSPrecheck, mgsupdate.PrecheckInput{SP: sled2, Component: mgs.ComponentHostBootFlash})
	require.NoError(t, err)
	for slot := range 2 {
		path := "/sp/sled/2/component/host-boot-flash/hash/" + string(rune('0'+slot))
		gets := m.reqs.count("GET /mgs/0"+path) + m.reqs.count("GET /mgs/1"+path)
		assert.LessOrEqual(t, gets, 4, "slot %d: %d reads while hashing", slot, gets)
		assert.GreaterOrEqual(t, gets, 2)
	}
}

// The phase 2 step decides the owner before it writes anything. With it
// unknown (here: neither a lockstep endpoint nor direct mode; on a rack,
// also a target disabled or an endpoint gone between the precheck and this
// step) it stops with no PUT of /artifacts-config at generation+1, which a
// real Nexus's TUF artifact replication would meet as 409
// CONFIG_GENERATION (nexus/src/app/background/tasks/tuf_artifact_replication.rs).
func TestPhase2StepWritesNothingWhileTheOwnerIsUnknown(t *testing.T) {
	m := newMGSAct(t)
	e := fleet.FromFleetsim(m.sim.URL, "") // not direct mode, no lockstep endpoint
	a := mgsupdate.NewMGSActivities(e, &http.Client{Timeout: 10 * time.Second, Transport: mgsChecked{t, m.reqs}}, nil, "test")
	m.env.RegisterActivity(a)
	sl := m.spec.Racks[0].Sleds[2]
	in := m.phase2ToDisk(t, sl, sl.ID)
	before := m.sledTruth(2).Host.Artifacts

	_, err := m.env.ExecuteActivity(a.HostPhase2ToDisk, in)
	assert.Equal(t, failure.OwnerUnknown, mgsErrType(err), "%v", err)
	assert.Zero(t, m.reqs.count("PUT /sled-agent/"+sl.ID.String()+"/artifacts-config"), "no artifact config written while the owner is unknown")
	assert.Equal(t, before, m.sledTruth(2).Host.Artifacts, "nothing put into the artifact store")
}

// After someone else's host update the host may still be booting: asked
// to wait, HostBootedOn waits for sled-agent to answer from the active
// slot's disk, as omicron's wait_for_update_done waits out
// MismatchedHostOsActiveSlot and SledAgentInventory
// (nexus/mgs-updates/src/driver_update.rs); not asked, it answers what it
// sees now.
func TestHostBootedOnWaitsForABootingHost(t *testing.T) {
	m := newMGSAct(t, func(s *spec.Spec) { s.Timings.HostBootTime = spec.Duration{Duration: 150 * time.Second} }) // 1.5 s
	sl := m.spec.Racks[0].Sleds[2]
	reset := func() {
		require.NoError(t, mgs.New(m.sim.URL+"/mgs/0", nil).Reset(context.Background(), sled2, mgs.ComponentSP))
	}
	in := mgsupdate.HostBootInput{SP: sled2, Serial: sl.Serial, SledID: sl.ID, Slot: uint16(m.truth().Host.ActiveSlot), Why: "check",
		Deadline: time.Now().Add(5 * time.Second), PollInterval: 10 * time.Millisecond}
	reset()
	v, err := m.env.ExecuteActivity(m.a.HostBootedOn, in)
	require.NoError(t, err)
	var booted bool
	require.NoError(t, v.Get(&booted))
	assert.False(t, booted, "the host is booting")

	reset()
	in.WaitBooted, in.Deadline = true, time.Now().Add(5*time.Second)
	v, err = m.env.ExecuteActivity(m.a.HostBootedOn, in)
	require.NoError(t, err)
	require.NoError(t, v.Get(&booted))
	assert.True(t, booted)
	assert.True(t, m.sledTruth(2).Host.Up)
}
