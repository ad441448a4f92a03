package rollout_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/health"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
)

// An attacker's plan points an HTTP health check at a host the worker
// does not allow (a cloud metadata service, an internal API), directly
// or by a redirect from an allowed one: the check is refused, and the
// other host gets no request.
func TestHealthCheckGoesOnlyToAllowedHosts(t *testing.T) {
	var internalHits atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		internalHits.Add(1)
	}))
	defer internal.Close()
	elsewhere := strings.Replace(internal.URL, "127.0.0.1", "localhost", 1) // same server, a host not allowed
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, elsewhere+"/latest/meta-data/", http.StatusFound)
		}
	}))
	defer allowed.Close()
	a := &rollout.HealthActivities{HTTP: http.DefaultClient, AllowedHosts: []string{"127.0.0.1"}}
	ctx := context.Background()

	res, err := a.CheckHealth(ctx, rollout.HealthCheck{Name: "ok", URL: allowed.URL + "/healthz"})
	require.NoError(t, err)
	require.Equal(t, health.Pass, res.Verdict)

	for _, u := range []string{elsewhere + "/latest/meta-data/", allowed.URL + "/redirect"} {
		_, err := a.CheckHealth(ctx, rollout.HealthCheck{Name: "evil", URL: u})
		requireInvalidCheck(t, err)
		require.ErrorContains(t, err, "--health-check-host")
	}
	require.Zero(t, internalHits.Load(), "the host not allowed got no request")

	none := &rollout.HealthActivities{HTTP: http.DefaultClient}
	_, err = none.CheckHealth(ctx, rollout.HealthCheck{Name: "ok", URL: allowed.URL + "/healthz"})
	requireInvalidCheck(t, err)
	require.ErrorContains(t, err, "--health-check-host")
}

func requireInvalidCheck(t *testing.T, err error) {
	t.Helper()
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, failure.HealthCheckInvalid, ae.Type())
	require.True(t, ae.NonRetryable())
}
