// Package prom reads a Prometheus server for health checks, through the
// official client library (HTTP API v1, instant queries).
package prom

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// QueryTimeout bounds one instant query; Prometheus's own default query
// timeout is 2 minutes, but a gate's query that slow is a broken gate.
const QueryTimeout = 30 * time.Second

// Client queries one Prometheus server.
type Client struct{ api v1.API }

// New returns a client of the server at url.
func New(url string) (*Client, error) {
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		return nil, fmt.Errorf("prometheus client: %w", err)
	}
	return &Client{api: v1.NewAPI(c)}, nil
}

// Sample is one series' value.
type Sample struct {
	Series string
	Value  float64
	// Target is the scrape target the series carries (its job and
	// instance labels); zero when the query aggregated them away.
	Target Target
}

// ErrBadQuery: Prometheus refused the query itself (bad PromQL, a type it
// cannot evaluate): asking again cannot help.
var ErrBadQuery = errors.New("prometheus refused the query")

// Query evaluates query now. A scalar is one sample with no series.
func (c *Client) Query(ctx context.Context, query string) ([]Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, QueryTimeout)
	defer cancel()
	v, _, _, err := c.api.Query(ctx, query, time.Now())
	if err != nil {
		var apiErr *v1.Error
		if errors.As(err, &apiErr) && (apiErr.Type == v1.ErrBadData || apiErr.Type == v1.ErrExec) {
			return nil, fmt.Errorf("%w: %s", ErrBadQuery, apiErr.Msg)
		}
		return nil, err
	}
	switch v := v.(type) {
	case model.Vector:
		out := make([]Sample, 0, len(v))
		for _, s := range v {
			out = append(out, Sample{Series: s.Metric.String(), Value: float64(s.Value), Target: targetOf(s.Metric)})
		}
		return out, nil
	case *model.Scalar:
		return []Sample{{Value: float64(v.Value)}}, nil
	default:
		return nil, fmt.Errorf("%w: a %s result; a health check wants an instant vector or a scalar", ErrBadQuery, v.Type())
	}
}
