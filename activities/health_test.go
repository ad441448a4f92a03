package activities_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/prom"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/health"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
)

// Issue 30: a health check against a real Prometheus scraping fleetsim's
// device health. It passes while every SP is healthy, fails naming the SP
// a bad release made unhealthy, and a query Prometheus refuses is an error
// of the plan, not a verdict.
func TestCheckHealthAgainstARealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Prometheus")
	}
	s, err := spec.Generate(spec.GenerateOptions{Sleds: 3, Servers: 1, Seed: 2, SpeedUp: 30})
	require.NoError(t, err)
	sim, err := fleetsim.Start(context.Background(), fleetsim.Env{Spec: s}, "127.0.0.1:0")
	require.NoError(t, err)
	defer sim.Close()
	ctx := context.Background()
	p, promURL, err := devstack.StartPrometheus(ctx, t.TempDir(), map[string]string{"fleetsim": sim.URL})
	require.NoError(t, err)
	defer p.Terminate(5 * time.Second) //nolint:errcheck
	pc, err := prom.New(promURL)
	require.NoError(t, err)
	a := &activities.HealthActivities{Prom: pc}

	spsHealthy := activities.HealthCheck{Name: "sps healthy", Query: `fleetsim_device_healthy{kind="sp"}`, Pass: "== 1"}
	verdict := func(c activities.HealthCheck) health.Result {
		r, err := a.CheckHealth(ctx, c)
		require.NoError(t, err)
		return r.Result
	}
	// Before the first scrape there is no data: inconclusive, never pass.
	require.Eventually(t, func() bool { return verdict(spsHealthy).Verdict == health.Pass }, 30*time.Second, 250*time.Millisecond)

	b, _ := json.Marshal(faults.Fault{Kind: faults.BadVersion, Target: "sp/sled/1", Version: spec.GeneratedSPActive})
	resp, err := http.Post(sim.URL+"/faults", "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	resp.Body.Close()
	var r health.Result
	require.Eventually(t, func() bool { r = verdict(spsHealthy); return r.Verdict == health.Fail }, 30*time.Second, 250*time.Millisecond)
	require.Contains(t, r.Reason, "1 of 3 readings not == 1")
	require.Len(t, r.Failing, 1)
	require.Contains(t, r.Failing[0].Series, `target="sp/sled/1"`)

	_, err = a.CheckHealth(ctx, activities.HealthCheck{Name: "typo", Query: `fleetsim_device_healthy{kind=`, Pass: "== 1"})
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	require.Equal(t, failure.HealthCheckInvalid, app.Type())

	require.Equal(t, health.Pass, verdict(activities.HealthCheck{Name: "up", URL: sim.URL + "/healthz"}).Verdict)
	require.Equal(t, health.Fail, verdict(activities.HealthCheck{Name: "nope", URL: sim.URL + "/nope"}).Verdict)
	require.Equal(t, health.Inconclusive, verdict(activities.HealthCheck{Name: "gone", URL: "http://127.0.0.1:1/"}).Verdict)
}
