package rollout

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/kinds"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// calendarTimeout bounds CalendarAt: it reads the time zone database and
// one ledger query.
const calendarTimeout = 30 * time.Second

// calendarCache is the last CalendarAt answer per kind, valid until its
// Until: the workflow asks again only when the calendar may have changed.
type calendarCache struct {
	at  time.Time
	ans CalendarAnswer
}

// calendarGate holds a stage's starts to the plan's calendar, and under
// endBehavior cancel cancels the running batch when its window ends.
type calendarGate struct {
	spec         *Calendar // the plan's (nil: any time)
	cache        map[workflows.Kind]calendarCache
	cancelWindow workflow.CancelFunc // cancels the running batch (endBehavior cancel)
	watchedClose time.Time           // the window end being watched
	windowCut    time.Time           // the window end that cancelled a batch

	moves    *inFlight
	why      *explainer
	events   *eventLog
	progress *workflows.Progress
	phase    func(ctx workflow.Context, p workflows.Phase, detail string)
}

// await holds a start until the calendar allows it: inside a
// window, not frozen, and the kind's measured duration ending before the
// window closes. It reports whether it waited.
func (c *calendarGate) await(ctx workflow.Context, st Stage) (bool, error) {
	if c.spec == nil {
		return false, nil
	}
	waited := false
	for {
		now := workflow.Now(ctx)
		ans, err := c.at(ctx, st.Kind, now)
		if err != nil {
			return waited, err
		}
		s := ans.State
		if s.Fits(now, ans.Typical) {
			c.watchWindowEnd(ctx, s.ClosesAt)
			if waited {
				c.why.waiting(ctx, WaitRunning, st.Name, "the calendar allows starts again")
				c.phase(ctx, workflows.PhaseRunningStage, "stage "+st.Name)
			}
			return waited, nil
		}
		wake, why, w := s.OpensAt, s.Why(), WaitWindow
		switch {
		case s.Frozen != nil:
			w = WaitFreeze
		case s.Open: // open, but the next update would overrun it
			wake = s.ClosesAt
			why = fmt.Sprintf("a %s update takes about %s (%s) and the window closes %s: waiting for the next window",
				st.Kind, ans.Typical, ans.Basis, s.ClosesAt.UTC().Format(time.RFC3339))
		}
		if !c.why.waitsFor(w, why) {
			c.why.waiting(ctx, w, st.Name, why)
			c.progress.Message = fmt.Sprintf("stage %s: %s", st.Name, why)
			workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s** — stage %s: no new target starts\n\n%s\n", c.progress.State, st.Name, why))
			c.events.record(ctx, st.Name, string(w)+"-wait", "", why, nil, false)
			workflows.Count(ctx, workflows.MetricRolloutWaits, map[string]string{"reason": string(w)})
		}
		waited = true
		if wake.IsZero() || !wake.After(now) {
			wake = now.Add(time.Minute) // cannot happen with a valid calendar; look again
		}
		if err := workflow.Sleep(ctx, wake.Sub(now)); err != nil {
			return waited, err
		}
	}
}

// at is the calendar at now for kind, from the cache while it
// holds.
func (c *calendarGate) at(ctx workflow.Context, kind workflows.Kind, now time.Time) (CalendarAnswer, error) {
	if got, ok := c.cache[kind]; ok && !now.Before(got.at) && (got.ans.Until.IsZero() || now.Before(got.ans.Until)) {
		return got.ans, nil
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: calendarTimeout, ScheduleToCloseTimeout: 5 * time.Minute, RetryPolicy: workflows.LedgerRetry,
		Summary: "calendar at " + now.UTC().Format(time.RFC3339),
	})
	var a *RolloutActivities
	var ans CalendarAnswer
	q := CalendarQuery{Calendar: c.spec.Calendar, At: now, Kind: string(kind), DeviceTime: kinds.Kinds[kind].DeviceTime}
	if err := workflow.ExecuteActivity(actx, a.CalendarAt, q).Get(ctx, &ans); err != nil {
		return CalendarAnswer{}, err
	}
	if c.cache == nil {
		c.cache = map[workflows.Kind]calendarCache{}
	}
	c.cache[kind] = calendarCache{at: now, ans: ans}
	return ans, nil
}

// watchWindowEnd, under endBehavior cancel, cancels the updates running
// when the window closing at closes ends (once per window; ctx is the
// rollout's, so the timer outlives the batch that set it).
func (c *calendarGate) watchWindowEnd(ctx workflow.Context, closes time.Time) {
	if c.spec.endBehavior() != WindowEndCancel || closes.IsZero() || closes.Equal(c.watchedClose) {
		return
	}
	c.watchedClose = closes
	workflow.Go(ctx, func(ctx workflow.Context) {
		if workflow.Sleep(ctx, closes.Sub(workflow.Now(ctx))) != nil {
			return
		}
		if c.cancelWindow != nil && len(c.moves.running) > 0 {
			c.windowCut = closes
			c.cancelWindow()
		}
	})
}
