package nexuslockstep_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/nexuslockstep"
	"github.com/fleetsaga/fleetsaga/fleet/openapi"
)

// testdata/blueprint-planner-report.json is the real blueprint with a
// planner source (BlueprintSource's planner variant, every step report
// at its required minimum, built from the vendored document's schema),
// naming two of its zones unsafe to shut down and a host update blocked
// for them; the test serves it through the contract check. The reasons'
// kinds need not match the zones': the test is of decoding.
func TestPlannerReportDecodes(t *testing.T) {
	raw, err := os.ReadFile("testdata/blueprint-planner-report.json")
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(raw)
	}))
	t.Cleanup(srv.Close)
	tr := &openapi.Transport{Contract: openapi.MustLoad(openapi.NexusLockstep), Prefix: "/nexus/r", Rep: t, Responses: true}
	c := nexuslockstep.New(srv.URL+"/nexus/r", &http.Client{Transport: tr, Timeout: 10 * time.Second})
	bp, err := c.Blueprint(context.Background(), uuid.MustParse("5b7c0e3a-1d2f-4a6b-8c9d-0e1f2a3b4c5d"))
	require.NoError(t, err)

	rep, ok := bp.PlannerReport()
	require.True(t, ok)
	require.Len(t, rep.UnsafeZones, 2)
	assert.Equal(t, "only 2/3 internal DNS zones are synchronized; require at least 3", rep.UnsafeZones[uuid.MustParse(realCrucible)].String())
	assert.Equal(t, "cockroach unsafe to shut down: 2 > 0 underreplicated ranges", rep.UnsafeZones[uuid.MustParse(realNexus)].String())
	require.Len(t, rep.BlockedMGSUpdates, 1)
	assert.Equal(t, "BRM42220031", rep.BlockedMGSUpdates[0].BaseboardID.SerialNumber)
	assert.Contains(t, rep.BlockedMGSUpdates[0].UnsafeZoneFound(), "2 > 0 underreplicated ranges")

	rss, err := nexuslockstep.ParseBlueprint([]byte(`{"id":"5b7c0e3a-1d2f-4a6b-8c9d-0e1f2a3b4c5d","source":{"source":"planner_loaded_from_database"}}`))
	require.NoError(t, err)
	_, ok = rss.PlannerReport()
	assert.False(t, ok, "a blueprint loaded from the database has no report")
}
