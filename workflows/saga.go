package workflows

import (
	"errors"

	"go.temporal.io/sdk/workflow"
)

// Saga collects compensations as steps succeed and runs them in reverse
// order when the workflow fails or is cancelled.
type Saga struct {
	steps []compensation
}

type compensation struct {
	name string
	fn   func(ctx workflow.Context) error
}

// Add registers the compensation for a step that just succeeded.
func (s *Saga) Add(name string, fn func(ctx workflow.Context) error) {
	s.steps = append(s.steps, compensation{name: name, fn: fn})
}

// AddLast registers a compensation that runs after every other one.
func (s *Saga) AddLast(name string, fn func(ctx workflow.Context) error) {
	s.steps = append([]compensation{{name: name, fn: fn}}, s.steps...)
}

// Len is the number of registered compensations.
func (s *Saga) Len() int { return len(s.steps) }

// Compensate runs every compensation, newest first, on a disconnected
// context so it also runs after the workflow was cancelled. It runs them all
// even if some fail, and returns the failures joined.
func (s *Saga) Compensate(ctx workflow.Context) error {
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	var errs []error
	for i := len(s.steps) - 1; i >= 0; i-- {
		c := s.steps[i]
		if err := c.fn(dctx); err != nil {
			workflow.GetLogger(ctx).Error("compensation failed", "step", c.name, "error", err)
			errs = append(errs, err)
		}
	}
	s.steps = nil
	return errors.Join(errs...)
}
