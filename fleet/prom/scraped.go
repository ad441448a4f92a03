package prom

import (
	"context"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Target names a scrape target as its series name it: the job and
// instance labels Prometheus attaches to everything it scrapes.
type Target struct {
	Job      string
	Instance string
}

func (t Target) String() string { return t.Job + "/" + t.Instance }

func targetOf(ls model.Metric) Target {
	return Target{Job: string(ls[model.JobLabel]), Instance: string(ls[model.InstanceLabel])}
}

// targetsTimeout bounds one read of the target list, like a query.
const targetsTimeout = QueryTimeout

// NotScrapedSince names the active targets whose last scrape began at or
// before t: their readings may predate t. It asks about the targets of
// samples (the series a query returned); when those name no active target
// (the query aggregated job and instance away, matched nothing, or reads
// series recorded elsewhere), about every active target, since any of
// them may feed the query.
func (c *Client) NotScrapedSince(ctx context.Context, t time.Time, samples []Sample) ([]Target, error) {
	ctx, cancel := context.WithTimeout(ctx, targetsTimeout)
	defer cancel()
	res, err := c.api.Targets(ctx)
	if err != nil {
		return nil, err
	}
	want := map[Target]bool{}
	for _, s := range samples {
		want[s.Target] = true
	}
	var named []v1.ActiveTarget
	for _, at := range res.Active {
		if want[targetOf(model.Metric(at.Labels))] {
			named = append(named, at)
		}
	}
	if len(named) == 0 {
		named = res.Active
	}
	var stale []Target
	for _, at := range named {
		if !at.LastScrape.After(t) {
			stale = append(stale, targetOf(model.Metric(at.Labels)))
		}
	}
	return stale, nil
}
