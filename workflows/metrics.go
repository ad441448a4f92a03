package workflows

import (
	"errors"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Metrics the workflows emit through the SDK's metrics handler (replay
// safe: nothing is counted again when a history replays). The worker
// exports them with Prometheus's _total suffix on counters
// (workerapp.Metrics); deploy/grafana's dashboard queries them.
const (
	// MetricUpdatesStarted counts runs started, by kind.
	MetricUpdatesStarted = "fleetsaga_updates_started"
	// MetricUpdatesEnded counts runs ended, by kind, state and outcome
	// (ok, cancelled, or the failure's type from package failure).
	MetricUpdatesEnded = "fleetsaga_updates_ended"
	// MetricGateRounds counts health gate rounds by verdict and shadow.
	MetricGateRounds = "fleetsaga_rollout_gate_rounds"
	// MetricRolloutStops counts rollouts that stopped themselves, by
	// reason (the failure type: health gate, threshold, window).
	MetricRolloutStops = "fleetsaga_rollout_stops"
	// MetricRolloutWaits counts waits a rollout began, by reason (window,
	// freeze, paused).
	MetricRolloutWaits = "fleetsaga_rollout_waits"
	// MetricRolloutStalls counts stalls (no update started or ended for
	// the plan's notify.stallAfter while updates ran).
	MetricRolloutStalls = "fleetsaga_rollout_stalls"
)

// Counters lists every counter above (the dashboard test emits each).
var Counters = []string{MetricUpdatesStarted, MetricUpdatesEnded, MetricGateRounds, MetricRolloutStops, MetricRolloutWaits, MetricRolloutStalls}

// Count adds one to counter name with tags.
func Count(ctx workflow.Context, name string, tags map[string]string) {
	workflow.GetMetricsHandler(ctx).WithTags(tags).Counter(name).Inc(1)
}

// endingOutcome is a bounded label for how a run ended: ok, cancelled,
// or the failure's type (the catalogue in package failure), else failed.
func endingOutcome(state State, err error) string {
	switch state {
	case StateCompleted:
		return "ok"
	case StateCancelled:
		return "cancelled"
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() != "" {
		return app.Type()
	}
	return "failed"
}
