package rollout

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/schedule"
)

// RecordRolloutEvent writes one decision of a rollout (a gate round, an
// abort, a pause, a wait) to the ledger and returns the decision the
// ledger holds for that point: e, or what the run before an operator's
// reset decided there (the rollout keeps a gate round's recorded
// verdict). A gate round is found wherever the run chain recorded it:
// a reset run that decided otherwise before it (a freeze since ended)
// counts one off from its predecessor's rows, and must neither judge a
// recorded round again nor record it twice. A different decision at that
// point (the reset run's calendar differs) is kept too, after everything
// recorded.
func (a *RolloutActivities) RecordRolloutEvent(ctx context.Context, e ledger.RolloutEvent) (ledger.RolloutEvent, error) {
	if rec, ok, err := a.recordedRound(ctx, e); err != nil || ok {
		return rec, err
	}
	got, err := a.Store.RecordRolloutEvent(ctx, e)
	if err != nil || sameDecision(got, e) {
		return got, err
	}
	return a.Store.AppendRolloutEvent(ctx, e)
}

// recordedRound is the row that already judged e's gate round in e's run
// chain, if e is a gate round and one did.
func (a *RolloutActivities) recordedRound(ctx context.Context, e ledger.RolloutEvent) (ledger.RolloutEvent, bool, error) {
	round := gateRoundOf(e)
	if round == "" {
		return ledger.RolloutEvent{}, false, nil
	}
	b, n, _ := strings.Cut(round, "/")
	batch, _ := strconv.Atoi(b) // digits: gateRoundOf matched them
	num, _ := strconv.Atoi(n)
	rows, err := a.Store.RolloutEventsOfStage(ctx, e.Rollout, e.RunID, e.Stage, gateReason(false, batch, num, ""), gateReason(true, batch, num, ""))
	if err != nil {
		return ledger.RolloutEvent{}, false, err
	}
	for _, r := range rows {
		if gateRoundOf(r) == round {
			return r, true, nil
		}
	}
	return ledger.RolloutEvent{}, false, nil
}

// CalendarQuery asks the calendar about one moment, for one kind's
// updates.
type CalendarQuery struct {
	Calendar schedule.Calendar `json:"calendar"`
	At       time.Time         `json:"at"`
	Kind     string            `json:"kind"`
	// DeviceTime is the kind's catalogue time, the answer when the
	// ledger has too few of its changes.
	DeviceTime time.Duration `json:"deviceTime"`
}

// CalendarAnswer is the calendar at that moment, until when it holds,
// and how long one update of the kind takes.
type CalendarAnswer struct {
	State schedule.State `json:"state"`
	// Until is the next moment the state may change (zero: never).
	Until time.Time `json:"until,omitzero"`
	// Typical is the kind's measured duration (the median of this
	// fleet's last changes), else its catalogue time.
	Typical time.Duration `json:"typical"`
	Basis   string        `json:"basis"`
}

// CalendarAt answers a CalendarQuery. It is an activity because the
// answer reads the time zone database and the ledger: the history keeps
// what this worker read.
func (a *RolloutActivities) CalendarAt(ctx context.Context, q CalendarQuery) (CalendarAnswer, error) {
	s := q.Calendar.At(q.At)
	ans := CalendarAnswer{State: s, Until: nextChange(q.Calendar, q.At, s)}
	ans.Typical, ans.Basis = q.DeviceTime, "the kind's typical time"
	if a.Store != nil {
		m, err := a.Store.MeasuredDurations(ctx, []string{q.Kind}, measuredWindow)
		if err != nil {
			return CalendarAnswer{}, err
		}
		if got, ok := m[q.Kind]; ok && got.Samples >= minMeasured {
			ans.Typical, ans.Basis = got.Median, "the median of this fleet's last changes"
		}
	}
	return ans, nil
}

// nextChange is the first moment after at when s may stop holding: the
// window's close or next open, or a freeze's start or end.
func nextChange(c schedule.Calendar, at time.Time, s schedule.State) time.Time {
	next := s.ClosesAt
	if !s.Open {
		next = s.OpensAt
	}
	for _, f := range c.Freezes {
		for _, t := range []time.Time{f.From, f.To} {
			if t.After(at) && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	return next
}
