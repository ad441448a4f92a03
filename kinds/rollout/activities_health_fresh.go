package rollout

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fleetsaga/fleetsaga/fleet/prom"
)

// A gate's round must judge the fleet after its batch, but Prometheus
// answers with what it last scraped: right after a batch ends that is the
// devices before they changed, and a bad release would pass on it. So a
// query check first waits until Prometheus has scraped, after the batch
// ended, every target the query reads, then queries.
//
// Why targets and not sample timestamps: an instant query's result is
// stamped with the evaluation time, not the scrape's; only a bare
// selector can be wrapped in timestamp(), and a gate's PromQL may be any
// expression (sums, ratios, rates). A target's last scrape bounds the age
// of every series it feeds, whatever the query does with them. (A range
// in the query, e.g. rate(x[5m]), still reaches back before the batch by
// its own design; its newest sample is fresh.)
//
// The batch's end is the workflow's clock and lastScrape Prometheus's: the
// two hosts' clocks are assumed synchronised (NTP); one running ahead by
// more than a scrape interval would let a stale scrape count as fresh.

// freshDataTimeout bounds the wait for fresh scrapes. Prometheus's default
// scrape interval is 1 min (15 s to 1 min is usual), so every healthy
// target is scraped within one interval of the batch's end; 90 s adds
// room for a slow scrape. A target not scraped by then is down, gone or
// its clock disagrees: the round is inconclusive, never a pass.
const freshDataTimeout = 90 * time.Second

// freshDataPoll is how often the target list is read while waiting: one
// small API call, and a second's delay on a 1 s scrape interval at most.
const freshDataPoll = 500 * time.Millisecond

// MaxHealthCheck bounds one CheckHealth of a query: the query that names
// its targets, the wait for fresh data (its last read of the targets may
// start just before freshDataTimeout), the query judged. An HTTP check
// takes httpCheckTimeout at most.
const MaxHealthCheck = prom.QueryTimeout + freshDataTimeout + 2*prom.QueryTimeout

// awaitScrapes waits until Prometheus has scraped the targets of samples
// (every target, when they name none) after t. It returns the targets
// still not scraped since t when freshDataTimeout ran out.
func (a *HealthActivities) awaitScrapes(ctx context.Context, t time.Time, samples []prom.Sample) ([]prom.Target, error) {
	deadline := time.Now().Add(a.freshDataTimeout())
	for {
		stale, err := a.Prom.NotScrapedSince(ctx, t, samples)
		if err != nil || len(stale) == 0 || time.Now().After(deadline) {
			return stale, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(freshDataPoll):
		}
	}
}

func (a *HealthActivities) freshDataTimeout() time.Duration {
	if a.freshWait > 0 {
		return a.freshWait
	}
	return freshDataTimeout
}

// maxStaleNamed keeps the reason one readable line.
const maxStaleNamed = 3

// notFresh says why a round had nothing fresh to judge.
func (a *HealthActivities) notFresh(t time.Time, stale []prom.Target) string {
	names := make([]string, 0, maxStaleNamed)
	for i, s := range stale {
		if i == maxStaleNamed {
			names = append(names, fmt.Sprintf("%d more", len(stale)-maxStaleNamed))
			break
		}
		names = append(names, s.String())
	}
	return fmt.Sprintf("no fresh data: Prometheus has not scraped %s since the batch ended at %s (waited %s); its readings would predate the batch",
		strings.Join(names, ", "), t.UTC().Format(time.RFC3339), a.freshDataTimeout())
}
