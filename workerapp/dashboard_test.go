package workerapp

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// grafanaDashboard is the part of Grafana's dashboard model the test reads.
type grafanaDashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Panels []struct {
		Title   string `json:"title"`
		Type    string `json:"type"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

var metricName = regexp.MustCompile(`\b(fleetsaga_[a-z_]+|go_[a-z_]+|process_[a-z_]+|temporal_[a-z_]+)\b`)

// The shipped dashboard loads, and every panel's query names a metric
// this worker's registry exports once each workflow metric was emitted
// through the SDK handler the workflows use.
func TestDashboardQueriesOnlyMetricsTheWorkerExports(t *testing.T) {
	b, err := os.ReadFile("../deploy/grafana/fleetsaga-rollouts.json")
	require.NoError(t, err)
	var d grafanaDashboard
	require.NoError(t, json.Unmarshal(b, &d))
	require.NotEmpty(t, d.Title)
	require.NotEmpty(t, d.UID)
	require.NotEmpty(t, d.Panels)

	m, err := NewMetrics()
	require.NoError(t, err)
	for _, name := range workflows.Counters {
		m.SDK.WithTags(map[string]string{"kind": "rollout"}).Counter(name).Inc(1)
	}
	m.WorkflowPanics.WithLabelValues("Rollout").Inc()
	families, err := m.Registry.Gather()
	require.NoError(t, err)
	exported := map[string]bool{}
	for _, f := range families {
		exported[f.GetName()] = true
	}
	for _, p := range d.Panels {
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			names := metricName.FindAllString(tg.Expr, -1)
			require.NotEmpty(t, names, "panel %q: %s names no metric", p.Title, tg.Expr)
			for _, n := range names {
				require.True(t, exported[n], "panel %q queries %s, which the worker does not export", p.Title, n)
			}
		}
	}
}
