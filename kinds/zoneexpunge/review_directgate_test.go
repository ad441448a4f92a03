package zoneexpunge_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
)

// Review: the direct-mode step itself must refuse unless direct mode is
// configured. A zone expunge whose precheck chose direct mode under the
// old rule (no lockstep endpoint, or a 404 from the wrong port) is still
// running when the worker is upgraded; its history replays Mode=direct and
// the workflow goes on to PutConfigWithoutZone. On a rack whose Nexus owns
// the sled configs (today's default, owners on), that PUT is a sled config
// written behind Nexus's executor: the gate is only in the precheck.
func TestReviewDirectPutRefusedWithoutDirectMode(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL + fleetsim")
	}
	env := testenv.New(t)
	f := &zoneFixture{env: env, ntp: uuid.New(), nexusA: uuid.New(), nexusB: uuid.New()}
	// Today's rack: its Nexus on (owners on), and the worker configured as
	// a real rack's: a lockstep endpoint, no direct mode.
	s := &spec.Spec{Seed: 3, SpeedUp: 100, Timings: spec.DefaultTimings()}
	rack := spec.Rack{ID: "r", MGSSleds: []int{0, 1}}
	zones := [][]spec.Zone{{{ID: f.ntp, Kind: "internal_ntp"}, {ID: f.nexusA, Kind: "nexus"}}, {{ID: f.nexusB, Kind: "nexus"}}}
	for i, zs := range zones {
		sl := spec.Sled{ID: uuid.New(), Cubby: i, Serial: fmt.Sprintf("S%d", i), SP: spec.SPFirmware{Active: "1"}, Generation: 3, Zones: zs}
		rack.Sleds = append(rack.Sleds, sl)
		f.sleds = append(f.sleds, sl.ID)
	}
	s.Racks = []spec.Rack{rack}
	require.NoError(t, s.Validate())
	f.sim = env.StartFleetsim(s)
	f.updateID = "fleetsaga/zone-expunge/zone/" + f.nexusA.String()
	ep := env.Endpoints(f.sim)
	require.False(t, ep.DirectMode)
	require.NotEmpty(t, ep.NexusLockstep)
	acts := zoneexpunge.NewZoneActivities(env.Store, ep, &http.Client{Timeout: 10 * time.Second}, "test")
	var suite testsuite.WorkflowTestSuite
	tenv := suite.NewTestActivityEnvironment()
	tenv.RegisterActivity(acts)

	f.expunge(t, f.nexusA, 4)
	_, err := tenv.ExecuteActivity(acts.PutConfigWithoutZone, zoneexpunge.ZonePutInput{AttemptID: f.attempt, Sled: f.sleds[0],
		Zone: f.nexusA, ExpungedAsOf: 4, Deadline: time.Now().Add(20 * time.Second),
		RetryInitial: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	assert.Equal(t, failure.OwnerUnknown, appErrType(err), "direct PUT without direct mode: %v", err)
	assert.Equal(t, uint64(3), sledOf(sledTruth(t, f.sim), f.sleds[0]).LedgeredGeneration,
		"no sled config written behind Nexus")
}
