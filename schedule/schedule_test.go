package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func berlin(t *testing.T, s string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
	require.NoError(t, err)
	return v
}

// Saturday and Sunday nights, 22:00-02:00 Berlin time (crossing midnight).
var weekendNights = Calendar{Windows: []Window{{Days: []string{"sat", "sun"}, Start: "22:00", Duration: 4 * time.Hour, TimeZone: "Europe/Berlin"}}}

func TestWindowOpenClosesAndNextOpening(t *testing.T) {
	require.NoError(t, weekendNights.Validate())
	// Saturday 2026-11-28 23:00: open, closes Sunday 02:00.
	s := weekendNights.At(berlin(t, "2026-11-28 23:00"))
	require.True(t, s.Open)
	require.Equal(t, berlin(t, "2026-11-29 02:00"), s.ClosesAt)
	require.True(t, s.Fits(berlin(t, "2026-11-28 23:00"), 3*time.Hour))
	require.False(t, s.Fits(berlin(t, "2026-11-28 23:00"), 3*time.Hour+time.Minute), "a target that would overrun the window does not start")
	// Sunday 01:30 is still Saturday's window.
	require.True(t, weekendNights.At(berlin(t, "2026-11-29 01:30")).Open)
	// Thursday: closed, opens Saturday 22:00.
	s = weekendNights.At(berlin(t, "2026-11-26 12:00"))
	require.False(t, s.Open)
	require.Equal(t, berlin(t, "2026-11-28 22:00"), s.OpensAt)
	require.Contains(t, s.Why(), "next opens 2026-11-28T21:00:00Z")
}

// A window's duration is real time: on the night clocks go back (Sunday
// 2026-10-25, 03:00 CEST → 02:00 CET) a 4-hour window from 01:00 local
// ends at 04:00 CET, three hours later on the wall clock.
func TestWindowAcrossADaylightSavingChange(t *testing.T) {
	c := Calendar{Windows: []Window{{Days: []string{"sun"}, Start: "01:00", Duration: 4 * time.Hour, TimeZone: "Europe/Berlin"}}}
	s := c.At(berlin(t, "2026-10-25 01:30"))
	require.True(t, s.Open)
	require.Equal(t, "2026-10-25 04:00 CET", s.ClosesAt.Format("2006-01-02 15:04 MST"))
	// The Saturday-night window starts in summer time and ends before it.
	s = weekendNights.At(berlin(t, "2026-10-24 23:00"))
	require.Equal(t, "2026-10-25 02:00 CEST", s.ClosesAt.Format("2006-01-02 15:04 MST"))
}

func TestFreezeBlocksAnOpenWindow(t *testing.T) {
	c := weekendNights
	c.Freezes = []Freeze{{From: berlin(t, "2026-11-28 00:00"), To: berlin(t, "2026-11-29 00:00"), Reason: "Black Friday weekend"}}
	s := c.At(berlin(t, "2026-11-28 23:00"))
	require.False(t, s.Open)
	require.Equal(t, "Black Friday weekend", s.Frozen.Reason)
	require.Equal(t, berlin(t, "2026-11-29 00:00"), s.OpensAt, "Saturday's window is still open when the freeze ends")
	require.Contains(t, s.Why(), "frozen until 2026-11-28T23:00:00Z: Black Friday weekend")
	require.True(t, c.At(berlin(t, "2026-11-29 00:30")).Open)
}

func TestNoWindowsIsAlwaysOpen(t *testing.T) {
	s := Calendar{}.At(time.Now())
	require.True(t, s.Open)
	require.True(t, s.Fits(time.Now(), 1000*time.Hour))
}

func TestValidateNamesEachMistake(t *testing.T) {
	err := Calendar{
		Windows: []Window{{Days: []string{"sat", "caturday"}, Start: "25:00", Duration: 0, TimeZone: "Mars/Olympus"}},
		Freezes: []Freeze{{From: berlin(t, "2026-12-02 00:00"), To: berlin(t, "2026-12-01 00:00")}},
	}.Validate()
	require.Error(t, err)
	for _, want := range []string{`time zone "Mars/Olympus"`, `start "25:00"`, "duration must be within", `day "caturday"`, "must be after from", "needs a reason"} {
		require.Contains(t, err.Error(), want)
	}
}
