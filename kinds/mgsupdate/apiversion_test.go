package mgsupdate_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
)

// A rack whose MGS serves an older API: the first request ends the
// activity with one non-retryable APIVersionRefused naming both sides.
func TestMGSActivityAgainstAnOlderMGSFailsWithAPIVersionRefused(t *testing.T) {
	srv := httptest.NewServer(httpx.RequireAPIVersion("2.0.0", http.NotFoundHandler()))
	t.Cleanup(srv.Close)
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	a := mgsupdate.NewMGSActivities(fleet.Endpoints{MGS: []string{srv.URL + "/a", srv.URL + "/b"}}, &http.Client{Timeout: 5 * time.Second}, nil, "test")
	env.RegisterActivity(a)
	_, err := env.ExecuteActivity(a.MGSPrecheck, mgsupdate.PrecheckInput{SP: sled2, Component: mgs.ComponentSP})
	require.Error(t, err)
	assert.Equal(t, failure.APIVersionRefused, mgsErrType(err))
	assert.Contains(t, err.Error(), "refused API version "+mgs.APIVersion)
	assert.Contains(t, err.Error(), "server does not support this API version: "+mgs.APIVersion)
}
