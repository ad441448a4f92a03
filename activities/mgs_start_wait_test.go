package activities_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

func (m *mgsAct) startThenWait(art activities.ArtifactRef, id uuid.UUID) activities.StartUpdateResult {
	m.t.Helper()
	sr, err := exec[activities.StartUpdateResult](m, m.a.MGSStartUpdate, activities.StartUpdateInput{
		SP: sled2, Component: mgs.ComponentSP, UpdateID: id, Artifact: art, PollInterval: 10 * time.Millisecond,
		ThenWait: &activities.WaitUpdateInput{SP: sled2, Component: mgs.ComponentSP, UpdateID: id, Ours: true,
			PollInterval: 10 * time.Millisecond, ProgressTimeout: 500 * time.Millisecond, TakeoverTimeout: 300 * time.Millisecond},
	})
	require.NoError(m.t, err)
	return sr
}

func TestMGSStartThenWaitsInOneActivity(t *testing.T) {
	m := newMGSAct(t)
	id := uuid.New()
	sr := m.startThenWait(m.artifact("1.1.0"), id)
	require.True(t, sr.Started)
	require.NotNil(t, sr.Wait)
	assert.Equal(t, activities.WaitComplete, sr.Wait.Outcome)
	assert.Equal(t, id, sr.Wait.Status.ID)
	assert.Len(t, m.truth().Deliveries, 1)

	// Someone else's update holds the SP: busy, and no wait of ours.
	sr = m.startThenWait(m.artifact("1.1.0"), uuid.New())
	assert.True(t, sr.Busy)
	assert.Nil(t, sr.Wait)
}

// A retry of the activity after MGS accepted our update, which the SP then
// lost in a reset, must report the update lost, not send it a second time
// under the same attempt. The ledger's start event, written when MGS
// accepted it, says so (a heartbeat may never have reached Temporal: they
// are throttled, and the worker may die first). Found by chaos seed 1.
func TestMGSStartRetryAfterLedgeredStartOnlyWaits(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	m := newMGSAct(t)
	env := testenv.New(t)
	m.a.Store = env.Store
	m.reg.Arm(faults.Fault{Kind: faults.SPResetMidDelivery, Target: "sp/sled/2", AfterPercent: 50, Times: 1})
	id := uuid.New()
	require.NoError(t, env.Store.RecordIntent(context.Background(), ledger.Attempt{ID: id, UpdateID: "u", Attempt: 1,
		Kind: "sp-firmware", Target: "sp/sled/2", Artifact: "1.1.0", WorkflowID: "u", RunID: "r"}))
	art := m.artifact("1.1.0")
	require.True(t, m.start(art, id).Started)
	require.Equal(t, activities.WaitLost, m.wait(id, true).Outcome)

	m.env.SetHeartbeatDetails(activities.WaitHeartbeat{State: "other-component-busy: host_boot_flash"})
	sr := m.startThenWait(art, id)
	require.NotNil(t, sr.Wait)
	assert.Equal(t, activities.WaitLost, sr.Wait.Outcome)
	assert.Len(t, m.truth().Deliveries, 1, "the lost attempt was not sent again")
}
