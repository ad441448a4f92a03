package rollout

import (
	"errors"
	"fmt"
	"time"

	"github.com/fleetsaga/fleetsaga/health"
)

// HealthCheck is one check of a gate, as the plan states it.
type HealthCheck struct {
	Name string `json:"name"`
	// Query is PromQL; every sample must satisfy Pass ("== 1").
	Query string `json:"query,omitempty"`
	Pass  string `json:"pass,omitempty"`
	// URL is an HTTP check: it passes when the answer's status is
	// ExpectStatus (default 200).
	URL          string `json:"url,omitempty"`
	ExpectStatus int    `json:"expectStatus,omitempty"`
	// ScrapedAfter is set by the rollout, not the plan: the end of the
	// batch the gate judges. A query check judges only data Prometheus
	// scraped after it (zero: a check scheduled by an older build, judged
	// as it was). An HTTP check is live and ignores it.
	ScrapedAfter time.Time `json:"scrapedAfter,omitzero"`
}

// Validate checks a check before anything starts.
func (c HealthCheck) Validate() error {
	switch {
	case c.Name == "":
		return errors.New("a health check needs a name")
	case (c.Query == "") == (c.URL == ""):
		return fmt.Errorf("health check %q: %w (exactly one)", c.Name, health.ErrNoCheck)
	case c.Query != "":
		if _, err := health.ParseCondition(c.Pass); err != nil {
			return fmt.Errorf("health check %q: pass: %w", c.Name, err)
		}
	case c.ExpectStatus != 0 && (c.ExpectStatus < 100 || c.ExpectStatus > 599):
		return fmt.Errorf("health check %q: expectStatus %d is not an HTTP status", c.Name, c.ExpectStatus)
	}
	return nil
}

// HealthResult is one run of one check.
type HealthResult struct {
	Name string `json:"name"`
	health.Result
}
