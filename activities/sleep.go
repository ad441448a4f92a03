package activities

import (
	"context"
	"time"
)

// SleepCtx waits d or until ctx ends (a poll loop's pause that a cancelled
// or timed-out activity leaves at once).
func SleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
