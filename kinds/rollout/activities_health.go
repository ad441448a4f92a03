package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/prom"
	"github.com/fleetsaga/fleetsaga/health"
)

// HealthActivities run a rollout's health checks: a PromQL
// query against the configured Prometheus, or an HTTP check.
type HealthActivities struct {
	Prom *prom.Client // nil: no Prometheus configured
	HTTP *http.Client
	// AllowedHosts are the hosts (name, or name:port) an HTTP check may
	// ask, redirects included (--health-check-host; none: no HTTP check
	// runs). A plan names the URL: without them a plan could make the
	// worker ask any host it reaches.
	AllowedHosts []string
	// freshWait replaces freshDataTimeout in tests (0: the constant).
	freshWait time.Duration
}

// httpCheckTimeout bounds an HTTP check: a health endpoint that takes
// longer is not healthy enough to judge by.
const httpCheckTimeout = 10 * time.Second

// CheckHealth runs one check once. A monitor that does not answer gives an
// inconclusive verdict (the gate counts those); a query Prometheus refuses,
// or a query check on a worker with no Prometheus, is a non-retryable
// error: the plan or the worker's configuration is wrong. A check whose
// own context ended (a worker shutdown, a pause, a cancel, its deadline)
// has no verdict: the monitor did not fail to answer, it was not waited
// for; the error lets Temporal run the check again.
func (a *HealthActivities) CheckHealth(ctx context.Context, c HealthCheck) (HealthResult, error) {
	if err := c.Validate(); err != nil {
		return HealthResult{}, temporal.NewNonRetryableApplicationError(err.Error(), failure.InvalidInput, nil)
	}
	var res HealthResult
	var err error
	if c.Query != "" {
		res, err = a.checkQuery(ctx, c)
	} else {
		res, err = a.checkURL(ctx, c)
	}
	if ctx.Err() != nil {
		return HealthResult{}, ctx.Err()
	}
	return res, err
}

func (a *HealthActivities) checkQuery(ctx context.Context, c HealthCheck) (HealthResult, error) {
	if a.Prom == nil {
		return HealthResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("health check %q queries Prometheus, and this worker has none configured", c.Name),
			failure.HealthCheckInvalid, nil)
	}
	cond, _ := health.ParseCondition(c.Pass) // checked by Validate
	samples, err := a.Prom.Query(ctx, c.Query)
	if err == nil && !c.ScrapedAfter.IsZero() {
		var stale []prom.Target
		if stale, err = a.awaitScrapes(ctx, c.ScrapedAfter, samples); err == nil && len(stale) > 0 {
			return HealthResult{Name: c.Name, Result: health.Result{Verdict: health.Inconclusive, Reason: a.notFresh(c.ScrapedAfter, stale)}}, nil
		}
		if err == nil {
			samples, err = a.Prom.Query(ctx, c.Query) // now judges only data scraped after the batch
		}
	}
	if errors.Is(err, prom.ErrBadQuery) {
		return HealthResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("health check %q: %v", c.Name, err),
			failure.HealthCheckInvalid, nil)
	}
	if err != nil {
		return HealthResult{Name: c.Name, Result: health.Result{Verdict: health.Inconclusive,
			Reason: "Prometheus did not answer: " + transportKind(err)}}, nil
	}
	readings := make([]health.Sample, 0, len(samples))
	for _, s := range samples {
		readings = append(readings, health.Sample{Series: s.Series, Value: s.Value})
	}
	return HealthResult{Name: c.Name, Result: health.Judge(cond, readings)}, nil
}

func (a *HealthActivities) checkURL(ctx context.Context, c HealthCheck) (HealthResult, error) {
	ctx, cancel := context.WithTimeout(ctx, httpCheckTimeout)
	defer cancel()
	want := c.ExpectStatus
	if want == 0 {
		want = http.StatusOK
	}
	res := HealthResult{Name: c.Name}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL, nil)
	if err != nil {
		res.Result = health.Result{Verdict: health.Inconclusive, Reason: "bad URL"}
		return res, nil
	}
	if err := a.allowed(req.URL); err != nil {
		return res, a.refused(c, err)
	}
	client := http.DefaultClient
	if a.HTTP != nil {
		client = a.HTTP
	}
	checked := *client
	checked.CheckRedirect = func(next *http.Request, via []*http.Request) error {
		if err := a.allowed(next.URL); err != nil {
			return err
		}
		if client.CheckRedirect != nil {
			return client.CheckRedirect(next, via)
		}
		return nil
	}
	resp, err := checked.Do(req)
	if errors.Is(err, errHostNotAllowed) {
		return res, a.refused(c, errHostNotAllowed)
	}
	if err != nil {
		res.Result = health.Result{Verdict: health.Inconclusive, Reason: "no answer: " + transportKind(err)}
		return res, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode == want {
		res.Result = health.Result{Verdict: health.Pass, Reason: fmt.Sprintf("HTTP %d", resp.StatusCode)}
	} else {
		res.Result = health.Result{Verdict: health.Fail, Reason: fmt.Sprintf("HTTP %d, want %d", resp.StatusCode, want)}
	}
	return res, nil
}

// errHostNotAllowed: an HTTP check (or its redirect) names a host the
// worker does not allow.
var errHostNotAllowed = errors.New("the URL's host is not one this worker may check (--health-check-host)")

// allowed says whether u's host is one of AllowedHosts (by name, or by
// name and port).
func (a *HealthActivities) allowed(u *url.URL) error {
	for _, h := range a.AllowedHosts {
		if strings.EqualFold(h, u.Hostname()) || strings.EqualFold(h, u.Host) {
			return nil
		}
	}
	return errHostNotAllowed
}

// refused is the non-retryable error of a check the worker will not run:
// the plan is wrong, or hostile. It names the check, not its URL.
func (a *HealthActivities) refused(c HealthCheck, err error) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("health check %q: %v", c.Name, err), failure.HealthCheckInvalid, nil)
}

// transportKind says what went wrong without the error's text, which
// names the URL, and a URL may carry credentials.
func transportKind(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return "connection failed"
}
