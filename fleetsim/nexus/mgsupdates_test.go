package nexus_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleet/openapi"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim/nexus"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// A pending MGS update in the target blueprint is carried out by Nexus's
// driver through the rack's MGS: any MGS client sees an update it did not
// start in flight, then the SP runs the new version, and the planner drops
// the pending update.
func TestPendingMGSUpdateIsCarriedOutThroughMGS(t *testing.T) {
	s := rackSpec(t, spec.RackOwners{Executor: spec.Off()}, []string{"internal_ntp"})
	srv := startSim(t, s, "")
	c := newLockstep(t, srv)
	sl := s.Racks[0].Sleds[0]
	m := fmgs.New(srv.URL+"/mgs/1", &http.Client{Timeout: 10 * time.Second,
		Transport: &openapi.Transport{Contract: mgsAPI, Prefix: "/mgs/1", Rep: t, Responses: true}})
	sp := fmgs.SpIdentifier{Type: fmgs.SpTypeSled, Slot: uint16(sl.Cubby)}
	ctx := context.Background()

	c.makeChildTarget(func(bp *nexus.Blueprint) {
		bp.PendingMGSUpdates.ByBaseboard = []nexus.PendingMGSUpdate{{
			ArtifactHash:    "8f2c0a7e5b1d4c3a9e6f7b8c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e",
			ArtifactVersion: "2.0.0",
			BaseboardID:     sledBaseboard(sl),
			Details:         json.RawMessage(`{"component":"sp","expected_active_version":"1.0.0","expected_inactive_version":{"kind":"version","version":"0.9.0"}}`),
			SlotID:          uint16(sl.Cubby),
			SpType:          "sled",
		}}
	}, true)

	// The other MGS reports Nexus's update in flight.
	var seen fmgs.UpdateStatus
	require.Eventually(t, func() bool {
		st, err := m.UpdateStatus(ctx, sp, fmgs.ComponentSP)
		if err != nil {
			return false
		}
		seen = st
		return st.State == fmgs.UpdatePreparing || st.State == fmgs.UpdateInProgress || st.State == fmgs.UpdateComplete
	}, waitFor, 2*time.Millisecond)
	attempts := nexusTruth(t, srv).Updates
	require.Len(t, attempts, 1)
	assert.Equal(t, "started", attempts[0].Outcome)
	assert.Equal(t, attempts[0].UpdateID, seen.ID, "MGS reports Nexus's update under Nexus's ID")

	require.Eventually(t, func() bool {
		cab, err := m.Caboose(ctx, sp, fmgs.ComponentSP, 0)
		return err == nil && cab.Version == "2.0.0"
	}, waitFor, 10*time.Millisecond, "the SP runs the new version after Nexus's reset")
	require.Eventually(t, func() bool {
		return len(c.targetBlueprint().PendingMGSUpdates.ByBaseboard) == 0
	}, waitFor, 10*time.Millisecond, "the planner drops the done update")
	assert.Len(t, nexusTruth(t, srv).Updates, 1, "one attempt")
}

func sledBaseboard(sl spec.Sled) sledagent.BaseboardID {
	return sledagent.BaseboardID{PartNumber: sl.Part, SerialNumber: sl.Serial}
}
