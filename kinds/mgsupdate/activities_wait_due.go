package mgsupdate

import "time"

// deliveryClock estimates when our update's delivery ends, from the bytes
// the SP reported during this leg of the wait, so the poll after the end
// comes a moment after it rather than up to a whole poll interval later
// (at real device times two such lags were most of an SP update's
// overhead: Nexus's driver polls every 3 s).
type deliveryClock struct {
	firstBytes int64
	firstAt    time.Time
}

// minPoll bounds how often a wait polls the SP, however close the end.
const minPoll = 200 * time.Millisecond

// next is the pause before the next poll: the poll interval, or less when
// the delivery's rate so far says it ends sooner (never below minPoll).
func (c *deliveryClock) next(poll time.Duration, bytes, total int64, now time.Time) time.Duration {
	if total <= 0 || bytes <= 0 {
		return poll
	}
	if c.firstAt.IsZero() || bytes < c.firstBytes {
		c.firstBytes, c.firstAt = bytes, now
		return poll
	}
	elapsed := now.Sub(c.firstAt)
	if bytes == c.firstBytes || elapsed <= 0 {
		return poll
	}
	rate := float64(bytes-c.firstBytes) / elapsed.Seconds() // bytes per second
	left := time.Duration(float64(total-bytes) / rate * float64(time.Second))
	return min(poll, max(left+minPoll/2, minPoll))
}
