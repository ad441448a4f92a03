package mgsupdate_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
)

// A host flash's sledId names the sled-agent when there is no sled table:
// one naming another sled than the SP's is refused (WrongDevice) by the
// phase 2 write, the zone safety check and the boot, before any of them
// writes to that sled or resets the SP, because that sled-agent's
// inventory reports another baseboard serial than the SP's.
func TestHostActivitiesRefuseASledAgentOfAnotherSled(t *testing.T) {
	m := newMGSAct(t)
	sl, other := m.spec.Racks[0].Sleds[2], m.spec.Racks[0].Sleds[3]
	require.NotEqual(t, sl.Serial, other.Serial)
	in := m.phase2ToDisk(t, sl, other.ID)
	active := in.ActiveSlot
	_, err := m.env.ExecuteActivity(m.a.HostPhase2ToDisk, in)
	require.Error(t, err)
	assert.Equal(t, failure.WrongDevice, mgsErrType(err), "%v", err)
	for i, d := range m.sledTruth(3).Host.Disks {
		assert.Zero(t, d.Writes, "the other sled's disk %d was written", i)
	}

	_, err = m.env.ExecuteActivity(m.a.HostZoneSafety, mgsupdate.ZoneSafetyInput{Serial: sl.Serial, SledID: other.ID})
	require.Error(t, err)
	assert.Equal(t, failure.WrongDevice, mgsErrType(err), "%v", err)

	boot := mgsupdate.HostBootInput{SP: sled2, Serial: sl.Serial, SledID: other.ID, Slot: active, Why: "restore",
		Deadline: time.Now().Add(5 * time.Second), PollInterval: 10 * time.Millisecond}
	_, err = m.env.ExecuteActivity(m.a.HostBootSlot, boot)
	require.Error(t, err)
	assert.Equal(t, failure.WrongDevice, mgsErrType(err), "%v", err)
	assert.Zero(t, m.truth().Resets, "the SP was reset on another sled's word")
}
