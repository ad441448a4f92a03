package rollout

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// The events a rollout tells its webhooks (CloudEvent types
// io.fleetsaga.<event>).
const (
	eventGateReached = "rollout.gate.reached"
	eventStageEnded  = "rollout.stage.ended"
	eventAborted     = "rollout.aborted"
	eventStraggler   = "rollout.update.straggler"
	eventStalled     = "rollout.stalled"
)

// notifyTimeout bounds one delivery attempt (the activity's own HTTP
// bound is 10 s); notifyRetryBound bounds its retries: a receiver down
// for longer misses the event, and the rollout never waits on it.
const (
	notifyTimeout    = 20 * time.Second
	notifyRetryBound = 10 * time.Minute
)

// notifier tells the plan's webhooks of the rollout's events, once each.
type notifier struct {
	spec     *Notify            // the plan's (nil: none)
	moves    *inFlight          // what runs (stalls, stragglers)
	notified map[string]bool    // events told (once each)
	notices  workflow.WaitGroup // deliveries still running
}

// notify tells every webhook of the plan about an event, once: its ID is
// the workflow ID, the run's original ID and the event's key, the same
// on every retry and replay, so a receiver keeps it once. Deliveries run
// beside the rollout (it never waits on a receiver); the rollout's end
// waits for them (flush).
func (n *notifier) notify(ctx workflow.Context, event, key string, data map[string]any) {
	if n.spec == nil {
		return
	}
	info := workflow.GetInfo(ctx)
	id := fmt.Sprintf("%s/%s/%s/%s", info.WorkflowExecution.ID, info.OriginalRunID, event, key)
	if n.notified == nil {
		n.notified = map[string]bool{}
	}
	if n.notified[id] {
		return
	}
	n.notified[id] = true
	notice := Notice{ID: id, Type: event, Subject: info.WorkflowExecution.ID, Time: workflow.Now(ctx), Data: data}
	// Disconnected: a cancelled rollout still tells of its end.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if n.notices == nil {
		n.notices = workflow.NewWaitGroup(ctx)
	}
	for _, hook := range n.spec.Webhooks {
		actx := workflow.WithActivityOptions(dctx, workflow.ActivityOptions{
			StartToCloseTimeout: notifyTimeout, ScheduleToCloseTimeout: notifyRetryBound,
			RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
			Summary:     "notify " + hook + ": " + event,
		})
		var a *NotifyActivities
		f := workflow.ExecuteActivity(actx, a.NotifyWebhook, WebhookNotice{Webhook: hook, Notice: notice})
		n.notices.Add(1)
		workflow.Go(dctx, func(ctx workflow.Context) {
			defer n.notices.Done()
			if err := f.Get(ctx, nil); err != nil {
				workflow.GetLogger(ctx).Warn("notification not delivered", "webhook", hook, "event", event, "error", err)
			}
		})
	}
}

// flush waits for the deliveries still running, so the rollout's last
// events are sent before it ends.
func (n *notifier) flush(ctx workflow.Context) {
	if n.notices == nil {
		return
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	n.notices.Wait(dctx)
}

// watchStalls, with notify.stallAfter, tells of a stall (updates run and
// none started or ended for that long) and of each straggler (an update
// running that long), once each. It waits without timers while nothing
// runs (a gate, a window, an approval is not a stall).
func (n *notifier) watchStalls(ctx workflow.Context) {
	if n.spec == nil || n.spec.StallAfter == 0 {
		return
	}
	m, after := n.moves, n.spec.StallAfter
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			if err := workflow.Await(ctx, func() bool { return len(m.running) > 0 }); err != nil {
				return
			}
			// One timer to the stall's deadline, not one per move: a move
			// meanwhile only moves the next deadline.
			seen := m.lastMove
			if wait := seen.Add(after).Sub(workflow.Now(ctx)); wait > 0 {
				if err := workflow.Sleep(ctx, wait); err != nil {
					return
				}
			}
			if m.lastMove != seen || len(m.running) == 0 {
				continue
			}
			now := workflow.Now(ctx)
			running := runningUpdates(m.startedAt)
			workflows.Count(ctx, workflows.MetricRolloutStalls, nil)
			n.notify(ctx, eventStalled, seen.UTC().Format(time.RFC3339Nano), map[string]any{
				"since": seen, "running": len(running), "reason": fmt.Sprintf("no update started or ended for %s", after)})
			for _, u := range running {
				if now.Sub(u.Since) >= after {
					n.notify(ctx, eventStraggler, u.Target+"@"+u.Since.UTC().Format(time.RFC3339Nano), map[string]any{
						"target": u.Target, "since": u.Since, "running": now.Sub(u.Since).String()})
				}
			}
			if err := workflow.Await(ctx, func() bool { return m.lastMove != seen }); err != nil {
				return
			}
		}
	})
}
