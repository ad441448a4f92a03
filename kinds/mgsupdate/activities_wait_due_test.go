package mgsupdate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestDeliveryClockPollsWhenTheEndIsDue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	poll := 3 * time.Second
	var c deliveryClock
	assert.Equal(t, poll, c.next(poll, 0, 1000, t0), "nothing received yet")
	assert.Equal(t, poll, c.next(poll, 100, 1000, t0), "one point: no rate yet")
	// 100 bytes/s, 500 left: 5 s away, more than a poll.
	assert.Equal(t, poll, c.next(poll, 500, 1000, t0.Add(4*time.Second)))
	// 900 received after 8 s: 100 left at 100 bytes/s is 1 s away.
	assert.Equal(t, time.Second+minPoll/2, c.next(poll, 900, 1000, t0.Add(8*time.Second)))
	// All received (the SP still writing): poll again soon, not at once.
	assert.Equal(t, minPoll, c.next(poll, 1000, 1000, t0.Add(9*time.Second)))
	// A shorter poll interval is never lengthened.
	assert.Equal(t, 500*time.Millisecond, c.next(500*time.Millisecond, 950, 1000, t0.Add(9*time.Second)))
	// A new delivery (fewer bytes than seen first) starts a new estimate.
	assert.Equal(t, poll, c.next(poll, 10, 1000, t0.Add(10*time.Second)))
}
