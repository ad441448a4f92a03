package bootimage

import (
	"context"
	"time"

	"github.com/fleetsaga/fleetsaga/activities"
)

// defaultPollInterval is how often a waiting activity looks when its input
// names no interval: the bump's own default (BootImageInput.PollInterval),
// a machine API read per look being cheap next to a machine's boot.
const defaultPollInterval = 5 * time.Second

// pollEvery is the input's interval, or the default when it names none.
func pollEvery(interval time.Duration) time.Duration {
	if interval <= 0 {
		return defaultPollInterval
	}
	return interval
}

// pollUntil is the loop of the activities that wait (the preconditions, the
// canary machine, the MCO's patches): it calls look until look is done,
// sleeping every between looks, and reports late once the deadline (zero:
// none) has passed after a look that was not done. A look's error, or a
// cancel during the sleep, ends it. look heartbeats what it saw.
func pollUntil(ctx context.Context, every time.Duration, deadline time.Time, look func() (done bool, err error)) (late bool, err error) {
	for {
		done, err := look()
		if err != nil || done {
			return false, err
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return true, nil
		}
		if err := activities.SleepCtx(ctx, every); err != nil {
			return false, err
		}
	}
}
