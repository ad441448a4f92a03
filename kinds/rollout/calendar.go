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

// awaitCalendar holds a start until the calendar allows it: inside a
// window, not frozen, and the kind's measured duration ending before the
// window closes. It reports whether it waited.
func (r *rollout) awaitCalendar(ctx workflow.Context, st Stage) (bool, error) {
	if r.in.Calendar == nil {
		return false, nil
	}
	waited := false
	for {
		now := workflow.Now(ctx)
		ans, err := r.calendarAt(ctx, st.Kind, now)
		if err != nil {
			return waited, err
		}
		s := ans.State
		if s.Fits(now, ans.Typical) {
			r.watchWindowEnd(ctx, s.ClosesAt)
			if waited {
				r.explainWaiting(ctx, WaitRunning, st.Name, "the calendar allows starts again")
				r.setPhase(ctx, workflows.PhaseRunningStage, "stage "+st.Name)
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
		if r.why.Waiting != w || r.why.Reason != why {
			r.explainWaiting(ctx, w, st.Name, why)
			r.progress.Message = fmt.Sprintf("stage %s: %s", st.Name, why)
			workflow.SetCurrentDetails(ctx, fmt.Sprintf("**%s** — stage %s: no new target starts\n\n%s\n", r.progress.State, st.Name, why))
			r.recordEvent(ctx, st.Name, string(w)+"-wait", "", why, nil, false)
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

// calendarAt is the calendar at now for kind, from the cache while it
// holds.
func (r *rollout) calendarAt(ctx workflow.Context, kind workflows.Kind, now time.Time) (CalendarAnswer, error) {
	if c, ok := r.calendar[kind]; ok && !now.Before(c.at) && (c.ans.Until.IsZero() || now.Before(c.ans.Until)) {
		return c.ans, nil
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: calendarTimeout, ScheduleToCloseTimeout: 5 * time.Minute, RetryPolicy: workflows.LedgerRetry,
		Summary: "calendar at " + now.UTC().Format(time.RFC3339),
	})
	var a *RolloutActivities
	var ans CalendarAnswer
	q := CalendarQuery{Calendar: r.in.Calendar.Calendar, At: now, Kind: string(kind), DeviceTime: kinds.Kinds[kind].DeviceTime}
	if err := workflow.ExecuteActivity(actx, a.CalendarAt, q).Get(ctx, &ans); err != nil {
		return CalendarAnswer{}, err
	}
	if r.calendar == nil {
		r.calendar = map[workflows.Kind]calendarCache{}
	}
	r.calendar[kind] = calendarCache{at: now, ans: ans}
	return ans, nil
}

// watchWindowEnd, under endBehavior cancel, cancels the updates running
// when the window closing at closes ends (once per window; ctx is the
// rollout's, so the timer outlives the batch that set it).
func (r *rollout) watchWindowEnd(ctx workflow.Context, closes time.Time) {
	if r.in.Calendar.endBehavior() != WindowEndCancel || closes.IsZero() || closes.Equal(r.watchedClose) {
		return
	}
	r.watchedClose = closes
	workflow.Go(ctx, func(ctx workflow.Context) {
		if workflow.Sleep(ctx, closes.Sub(workflow.Now(ctx))) != nil {
			return
		}
		if r.cancelWindow != nil && len(r.running) > 0 {
			r.windowCut = closes
			r.cancelWindow()
		}
	})
}
