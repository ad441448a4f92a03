package rollout

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/fleetsaga/fleetsaga/schedule"
)

// HealthGate is a stage's automated analysis: after each batch
// of the stage's updates the rollout runs its checks every Interval for
// Bake, and the batch passes once the bake has elapsed and the last round
// passed. FailuresToAbort failed rounds abort the rollout;
// InconclusiveToPause inconclusive rounds pause it (an operator resumes).
// In Shadow mode every result is recorded and nothing is blocked.
type HealthGate struct {
	Checks              []HealthCheck `json:"checks"`
	Bake                time.Duration `json:"bake,omitempty"`
	Interval            time.Duration `json:"interval,omitempty"`
	FailuresToAbort     int           `json:"failuresToAbort,omitempty"`
	InconclusiveToPause int           `json:"inconclusiveToPause,omitempty"`
	Shadow              bool          `json:"shadow,omitempty"`
}

// Defaults of a gate's counts and interval.
const (
	defaultFailuresToAbort     = 1
	defaultInconclusiveToPause = 3
	// defaultGateInterval: Prometheus scrapes every 15 s to 1 min; checking
	// more often than a scrape reads the same sample again.
	defaultGateInterval = 30 * time.Second
	// minGateInterval keeps a gate from flooding the history: each round
	// is a few events.
	minGateInterval = time.Second
	// maxGateChecks keeps one round's activities few.
	maxGateChecks = 10
)

func (g HealthGate) failuresToAbort() int {
	return orDefault(g.FailuresToAbort, defaultFailuresToAbort)
}
func (g HealthGate) inconclusiveToPause() int {
	return orDefault(g.InconclusiveToPause, defaultInconclusiveToPause)
}
func (g HealthGate) interval() time.Duration {
	if g.Interval == 0 {
		return min(defaultGateInterval, max(g.Bake, minGateInterval))
	}
	return g.Interval
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Validate names what is wrong with the gate.
func (g HealthGate) Validate() error {
	var errs []error
	if len(g.Checks) == 0 || len(g.Checks) > maxGateChecks {
		errs = append(errs, fmt.Errorf("health: checks: give 1 to %d checks", maxGateChecks))
	}
	names := map[string]bool{}
	for i, c := range g.Checks {
		if err := c.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("health: checks[%d]: %w", i, err))
		}
		if names[c.Name] {
			errs = append(errs, fmt.Errorf("health: checks[%d]: name %q appears twice", i, c.Name))
		}
		names[c.Name] = true
		if c.URL != "" {
			if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				errs = append(errs, fmt.Errorf("health: checks[%d]: url must be an http(s) URL", i))
			}
		}
	}
	if g.Bake < 0 {
		errs = append(errs, errors.New("health: bake must be >= 0"))
	}
	if g.Interval != 0 && g.Interval < minGateInterval {
		errs = append(errs, fmt.Errorf("health: interval must be at least %s", minGateInterval))
	}
	if g.FailuresToAbort < 0 || g.InconclusiveToPause < 0 {
		errs = append(errs, errors.New("health: failuresToAbort and inconclusiveToPause must be >= 1 (0: the default)"))
	}
	return errors.Join(errs...)
}

// Threshold aborts the rollout when more than Percent of a stage's ended
// updates failed with Class, once at least Minimum ended.
type Threshold struct {
	Class   FailureClass `json:"class"`
	Percent float64      `json:"percent"`
	Minimum int          `json:"minimum"`
}

// Validate names what is wrong with the threshold.
func (t Threshold) Validate() error {
	var errs []error
	if !knownClass(t.Class) {
		errs = append(errs, fmt.Errorf("class %q is not one of %s", t.Class, failureClassNames()))
	}
	if t.Percent < 0 || t.Percent >= 100 {
		errs = append(errs, fmt.Errorf("percent must be within [0, 100), got %g", t.Percent))
	}
	if t.Minimum < 1 {
		errs = append(errs, errors.New("minimum must be >= 1 (how many updates must end before the percentage counts)"))
	}
	return errors.Join(errs...)
}

// Ramp starts a stage with Start updates at once and multiplies that by
// Factor after each healthy batch (no failure, gate passed), up to the
// stage's concurrency.
type Ramp struct {
	Start  int     `json:"start"`
	Factor float64 `json:"factor"`
}

// Validate names what is wrong with the ramp.
func (r Ramp) Validate(concurrency int) error {
	var errs []error
	if r.Start < 1 || r.Start > max(concurrency, 1) {
		errs = append(errs, fmt.Errorf("ramp: start must be within [1, concurrency %d], got %d", concurrency, r.Start))
	}
	if r.Factor <= 1 || r.Factor > 10 {
		errs = append(errs, fmt.Errorf("ramp: factor must be within (1, 10], got %g", r.Factor))
	}
	return errors.Join(errs...)
}

// next is the batch size after a healthy batch of size n.
func (r Ramp) next(n, concurrency int) int {
	grown := int(float64(n)*r.Factor + 0.999999)
	return min(max(grown, n+1), concurrency)
}

// Calendar is when a plan's targets may start: maintenance windows and
// freezes (package schedule), and what a window's end does to updates
// still running.
type Calendar struct {
	schedule.Calendar
	EndBehavior WindowEnd `json:"endBehavior,omitempty"`
}

// WindowEnd is what the end of a window does.
type WindowEnd string

const (
	// WindowEndStopStarting: running updates finish; nothing new starts
	// until the next window (the default).
	WindowEndStopStarting WindowEnd = "stop-starting"
	// WindowEndCancel: running updates are cancelled (they compensate)
	// and the rollout ends.
	WindowEndCancel WindowEnd = "cancel"
)

// Validate names what is wrong with the calendar.
func (c Calendar) Validate() error {
	var errs []error
	for _, e := range flatten(c.Calendar.Validate()) {
		errs = append(errs, fmt.Errorf("calendar: %w", e))
	}
	if c.EndBehavior != "" && c.EndBehavior != WindowEndStopStarting && c.EndBehavior != WindowEndCancel {
		errs = append(errs, fmt.Errorf("calendar: endBehavior %q is not %s or %s", c.EndBehavior, WindowEndStopStarting, WindowEndCancel))
	}
	if len(c.Windows) == 0 && len(c.Freezes) == 0 {
		errs = append(errs, errors.New("calendar: give windows, freezes or both"))
	}
	return errors.Join(errs...)
}

func (c *Calendar) endBehavior() WindowEnd {
	if c == nil || c.EndBehavior == "" {
		return WindowEndStopStarting
	}
	return c.EndBehavior
}

// flatten lists the errors joined in err (nil: none).
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}
