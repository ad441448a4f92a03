package zoneexpunge_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
)

// A sled-agent that serves an older API: the zone activity ends with
// APIVersionRefused at the first request, not a retry loop or a rebase.
func TestZoneActivityAgainstAnOlderSledAgentFailsWithAPIVersionRefused(t *testing.T) {
	srv := httptest.NewServer(httpx.RequireAPIVersion("47.0.0", http.NotFoundHandler()))
	t.Cleanup(srv.Close)
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	z := zoneexpunge.NewZoneActivities(nil, fleet.Endpoints{SledAgent: srv.URL + "/{sled}"}, &http.Client{Timeout: 5 * time.Second}, "test")
	env.RegisterActivity(z)
	_, err := env.ExecuteActivity(z.AwaitZoneGone, zoneexpunge.ZoneGoneInput{Sled: uuid.New(), Zone: uuid.New(), ExpungedAsOf: 4,
		Deadline: time.Now().Add(time.Minute)})
	require.Error(t, err)
	assert.Equal(t, failure.APIVersionRefused, appErrType(err))
	assert.Contains(t, err.Error(), "refused API version "+sledagent.APIVersion)
}
