// Package schedule says when a rollout may start targets: recurring
// maintenance windows in a time zone, and freezes that block even approved
// stages. It is pure; the workflow asks it through an activity,
// so the answer (which reads the time zone database) is in the history.
package schedule

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Window is a weekly maintenance window: from Start (local "15:04") on
// each of Days for Duration, in TimeZone (IANA name; default UTC).
type Window struct {
	Days     []string      `json:"days"`
	Start    string        `json:"start"`
	Duration time.Duration `json:"duration"`
	TimeZone string        `json:"timeZone,omitempty"`
}

// Freeze blocks every start from From until To, approvals or not.
type Freeze struct {
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	Reason string    `json:"reason"`
}

// Calendar is a plan's (or a stage's) windows and freezes. No windows:
// always open, unless frozen.
type Calendar struct {
	Windows []Window `json:"windows,omitempty"`
	Freezes []Freeze `json:"freezes,omitempty"`
}

// maxWindow keeps a window within a week: a longer one is always open.
const maxWindow = 7 * 24 * time.Hour

var weekdays = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday,
	"wed": time.Wednesday, "thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

// Validate names the first thing wrong with each window and freeze.
func (c Calendar) Validate() error {
	var errs []error
	for i, w := range c.Windows {
		if _, err := w.location(); err != nil {
			errs = append(errs, fmt.Errorf("windows[%d]: %w", i, err))
		}
		if _, _, err := w.clock(); err != nil {
			errs = append(errs, fmt.Errorf("windows[%d]: %w", i, err))
		}
		if w.Duration <= 0 || w.Duration > maxWindow {
			errs = append(errs, fmt.Errorf("windows[%d]: duration must be within (0, 168h], got %s", i, w.Duration))
		}
		if len(w.Days) == 0 {
			errs = append(errs, fmt.Errorf("windows[%d]: days is empty (mon … sun)", i))
		}
		for _, d := range w.Days {
			if _, ok := weekdays[strings.ToLower(d)]; !ok {
				errs = append(errs, fmt.Errorf("windows[%d]: day %q is not one of mon tue wed thu fri sat sun", i, d))
			}
		}
	}
	for i, f := range c.Freezes {
		if !f.To.After(f.From) {
			errs = append(errs, fmt.Errorf("freezes[%d]: to (%s) must be after from (%s)", i, f.To.Format(time.RFC3339), f.From.Format(time.RFC3339)))
		}
		if strings.TrimSpace(f.Reason) == "" {
			errs = append(errs, fmt.Errorf("freezes[%d]: a freeze needs a reason (it is what operators are shown)", i))
		}
	}
	return errors.Join(errs...)
}

func (w Window) location() (*time.Location, error) {
	name := w.TimeZone
	if name == "" {
		name = "UTC"
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("time zone %q is not an IANA zone name (e.g. Europe/Berlin)", w.TimeZone)
	}
	return loc, nil
}

func (w Window) clock() (hour, minute int, err error) {
	t, err := time.Parse("15:04", w.Start)
	if err != nil {
		return 0, 0, fmt.Errorf("start %q is not a local time like 02:00", w.Start)
	}
	return t.Hour(), t.Minute(), nil
}

// State is the calendar at one moment.
type State struct {
	// Open: a target may start now.
	Open bool `json:"open"`
	// ClosesAt is when the open window ends (zero: no window, or closed).
	ClosesAt time.Time `json:"closesAt,omitzero"`
	// OpensAt is when starts may begin again (zero: open, or never).
	OpensAt time.Time `json:"opensAt,omitzero"`
	// Frozen is the freeze in force, if any.
	Frozen *Freeze `json:"frozen,omitempty"`
}

// Fits reports whether a target that takes d, started at now, ends before
// the window closes (always, with no window).
func (s State) Fits(now time.Time, d time.Duration) bool {
	return s.Open && (s.ClosesAt.IsZero() || !now.Add(d).After(s.ClosesAt))
}

// Why says, in one line, why nothing may start now ("" when open).
func (s State) Why() string {
	switch {
	case s.Open:
		return ""
	case s.Frozen != nil:
		return fmt.Sprintf("frozen until %s: %s", s.Frozen.To.UTC().Format(time.RFC3339), s.Frozen.Reason)
	case !s.OpensAt.IsZero():
		return "outside the maintenance windows; the next opens " + s.OpensAt.UTC().Format(time.RFC3339)
	}
	return "outside the maintenance windows"
}

// At is the calendar's state at t. The calendar must be valid.
func (c Calendar) At(t time.Time) State {
	if f := c.frozenAt(t); f != nil {
		s := State{Frozen: f}
		if next := c.windowsAt(f.To); next.Open {
			s.OpensAt = f.To
		} else {
			s.OpensAt = next.OpensAt
		}
		return s
	}
	return c.windowsAt(t)
}

func (c Calendar) frozenAt(t time.Time) *Freeze {
	for i, f := range c.Freezes {
		if !t.Before(f.From) && t.Before(f.To) {
			return &c.Freezes[i]
		}
	}
	return nil
}

// windowsAt ignores freezes: open in any window (closing at the latest
// end among those open), else when the next one opens.
func (c Calendar) windowsAt(t time.Time) State {
	if len(c.Windows) == 0 {
		return State{Open: true}
	}
	var s State
	for _, w := range c.Windows {
		for _, occ := range w.occurrences(t) {
			switch {
			case !t.Before(occ[0]) && t.Before(occ[1]):
				s.Open = true
				if occ[1].After(s.ClosesAt) {
					s.ClosesAt = occ[1]
				}
			case occ[0].After(t) && (s.OpensAt.IsZero() || occ[0].Before(s.OpensAt)):
				s.OpensAt = occ[0]
			}
		}
	}
	if s.Open {
		s.OpensAt = time.Time{}
	}
	return s
}

// occurrences are the window's [start, end) spans that begin from a week
// before t to a week after it, in its time zone (DST-aware: a local start
// that does not exist on a spring-forward day is normalised by time.Date).
func (w Window) occurrences(t time.Time) [][2]time.Time {
	loc, err := w.location()
	if err != nil {
		return nil
	}
	hour, minute, err := w.clock()
	if err != nil {
		return nil
	}
	var days []time.Weekday
	for _, d := range w.Days {
		days = append(days, weekdays[strings.ToLower(d)])
	}
	local := t.In(loc)
	var out [][2]time.Time
	for off := -8; off <= 8; off++ {
		day := time.Date(local.Year(), local.Month(), local.Day()+off, hour, minute, 0, 0, loc)
		if slices.Contains(days, day.Weekday()) {
			out = append(out, [2]time.Time{day, day.Add(w.Duration)})
		}
	}
	return out
}
