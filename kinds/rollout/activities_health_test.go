package rollout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/fleetsaga/fleetsaga/fleet/prom"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/health"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
)

// A health check against a real Prometheus scraping fleetsim's
// device health. It passes while every SP is healthy, fails naming the SP
// a bad release made unhealthy, and a query Prometheus refuses is an error
// of the plan, not a verdict.
func TestCheckHealthAgainstARealPrometheus(t *testing.T) {
	sim, a := promOverFleetsim(t)
	ctx := context.Background()
	verdict := func(c rollout.HealthCheck) health.Result { return judge(t, a, c) }
	// Before the first scrape there is no data: inconclusive, never pass.
	require.Eventually(t, func() bool { return verdict(spsHealthy).Verdict == health.Pass }, 30*time.Second, 250*time.Millisecond)

	makeSled1Unhealthy(t, sim)
	var r health.Result
	require.Eventually(t, func() bool { r = verdict(spsHealthy); return r.Verdict == health.Fail }, 30*time.Second, 250*time.Millisecond)
	require.Contains(t, r.Reason, "1 of 3 readings not == 1")
	require.Len(t, r.Failing, 1)
	require.Contains(t, r.Failing[0].Series, `target="sp/sled/1"`)

	_, err := a.CheckHealth(ctx, rollout.HealthCheck{Name: "typo", Query: `fleetsim_device_healthy{kind=`, Pass: "== 1"})
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	require.Equal(t, failure.HealthCheckInvalid, app.Type())

	require.Equal(t, health.Pass, verdict(rollout.HealthCheck{Name: "up", URL: sim.URL + "/healthz"}).Verdict)
	require.Equal(t, health.Fail, verdict(rollout.HealthCheck{Name: "nope", URL: sim.URL + "/nope"}).Verdict)
	require.Equal(t, health.Inconclusive, verdict(rollout.HealthCheck{Name: "gone", URL: "http://127.0.0.1:1/"}).Verdict)
}

// promOverFleetsim starts a fleet of 3 sleds and a real Prometheus scraping
// it every second, and health activities querying it (skipped by -short).
func promOverFleetsim(t *testing.T) (*fleetsim.Server, *rollout.HealthActivities) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Prometheus")
	}
	s, err := spec.Generate(spec.GenerateOptions{Sleds: 3, Servers: 1, Seed: 2, SpeedUp: 30})
	require.NoError(t, err)
	sim, err := fleetsim.Start(context.Background(), fleetsim.Env{Spec: s}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { sim.Close() })
	p, promURL, err := devstack.StartPrometheus(context.Background(), t.TempDir(), map[string]string{"fleetsim": sim.URL})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Terminate(5 * time.Second) })
	pc, err := prom.New(promURL)
	require.NoError(t, err)
	return sim, &rollout.HealthActivities{Prom: pc, AllowedHosts: []string{"127.0.0.1"}}
}

// makeSled1Unhealthy makes the version sled 1's SP runs a bad release
// (fleetsim's bad_version fault): its health reads 0 from now on.
func makeSled1Unhealthy(t *testing.T, sim *fleetsim.Server) {
	t.Helper()
	b, _ := json.Marshal(faults.Fault{Kind: faults.BadVersion, Target: "sp/sled/1", Version: spec.GeneratedSPActive})
	resp, err := http.Post(sim.URL+"/faults", "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	resp.Body.Close()
}

// A gate's round judges only data Prometheus scraped after its batch
// ended: asked the moment a device turned unhealthy, a query check fails
// (Prometheus still held the healthy reading; the check waited for the
// next scrape). A batch whose data never gets fresh (here: it "ended" an
// hour from now, as a clock far ahead would say) is inconclusive, naming
// the target, never a pass. An HTTP check is live and does not wait.
func TestQueryCheckJudgesOnlyDataScrapedAfterTheBatch(t *testing.T) {
	sim, a := promOverFleetsim(t)
	check := spsHealthy
	require.Eventually(t, func() bool { return judge(t, a, check).Verdict == health.Pass }, 30*time.Second, 250*time.Millisecond)

	makeSled1Unhealthy(t, sim)
	check.ScrapedAfter = time.Now()
	r := judge(t, a, check)
	require.Equal(t, health.Fail, r.Verdict, "judged the reading from before the batch: %+v", r)
	require.Contains(t, r.Failing[0].Series, `target="sp/sled/1"`)

	rollout.SetFreshDataTimeout(a, 2*time.Second)
	check.ScrapedAfter = time.Now().Add(time.Hour)
	r = judge(t, a, check)
	require.Equal(t, health.Inconclusive, r.Verdict, "%+v", r)
	require.Contains(t, r.Reason, "no fresh data: Prometheus has not scraped fleetsim/127.0.0.1:")
	require.Contains(t, r.Reason, "its readings would predate the batch")

	r = judge(t, a, rollout.HealthCheck{Name: "up", URL: sim.URL + "/healthz", ScrapedAfter: time.Now().Add(time.Hour)})
	require.Equal(t, health.Pass, r.Verdict, "an HTTP check is live: no scrape to wait for: %+v", r)
}

// spsHealthy is a gate's check on every SP's health as fleetsim reports it.
var spsHealthy = rollout.HealthCheck{Name: "sps healthy", Query: `fleetsim_device_healthy{kind="sp"}`, Pass: "== 1"}

// judge runs c, which must not be an error.
func judge(t *testing.T, a *rollout.HealthActivities, c rollout.HealthCheck) health.Result {
	t.Helper()
	r, err := a.CheckHealth(context.Background(), c)
	require.NoError(t, err)
	return r.Result
}
