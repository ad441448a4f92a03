package mgsupdate

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"

	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// Every status the SP can report, for our update and a foreign one, and
// what the wait decides: the outcome ("" polls on) and whether the update
// is aborted first.
func TestDecideWait(t *testing.T) {
	watched, other := uuid.MustParse("11111111-1111-4111-8111-111111111111"), uuid.MustParse("22222222-2222-4222-8222-222222222222")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(10 * time.Minute)
	const progressTimeout, takeoverTimeout = 5 * time.Minute, 3 * time.Minute
	st := func(s mgs.UpdateState, id uuid.UUID, got, total uint32) mgs.UpdateStatus {
		return mgs.UpdateStatus{State: s, ID: id, BytesReceived: got, TotalBytes: total}
	}
	fresh := WaitUpdateResult{LastBytes: 100, LastChange: now.Add(-time.Minute)}     // progress a minute ago
	stale := WaitUpdateResult{LastBytes: 100, LastChange: now.Add(-6 * time.Minute)} // none for longer than the progress timeout
	completeLong := WaitUpdateResult{CompleteSince: now.Add(-4 * time.Minute)}
	completeNow := WaitUpdateResult{CompleteSince: now.Add(-time.Minute)}
	idle := WaitUpdateResult{LastChange: now.Add(-time.Minute)} // nothing received yet
	for _, c := range []struct {
		name      string
		ours      bool
		component string // default SP
		seen      WaitUpdateResult
		st        mgs.UpdateStatus
		checkEach time.Duration
		want      string
		abort     bool
	}{
		{name: "ours vanished: lost", ours: true, seen: fresh, st: st(mgs.UpdateNone, uuid.Nil, 0, 0), want: WaitLost},
		{name: "foreign ended unactivated: free", seen: fresh, st: st(mgs.UpdateNone, uuid.Nil, 0, 0), want: WaitFree},
		{name: "foreign complete, then reset by someone", seen: completeNow, st: st(mgs.UpdateNone, uuid.Nil, 0, 0), want: WaitForeignDone},
		{name: "ours replaced", ours: true, seen: fresh, st: st(mgs.UpdateInProgress, other, 5, 10), want: WaitReplaced},
		{name: "foreign replaced", seen: fresh, st: st(mgs.UpdateInProgress, other, 5, 10), want: WaitReplaced},
		{name: "ours complete", ours: true, seen: fresh, st: st(mgs.UpdateComplete, watched, 0, 0), want: WaitComplete},
		{name: "foreign SP complete, within the takeover timeout", seen: completeNow, st: st(mgs.UpdateComplete, watched, 0, 0), want: ""},
		{name: "foreign SP complete, first seen", seen: fresh, st: st(mgs.UpdateComplete, watched, 0, 0), want: ""},
		{name: "foreign SP complete, nobody reset it", seen: completeLong, st: st(mgs.UpdateComplete, watched, 0, 0), want: WaitTakeover},
		// omicron nexus/mgs-updates/src/driver_update.rs: someone else's
		// complete update of any component is waited for, then taken over.
		{name: "foreign host flash complete, within the takeover timeout", component: mgs.ComponentHostBootFlash, seen: completeNow, st: st(mgs.UpdateComplete, watched, 0, 0), want: ""},
		{name: "foreign host flash complete, nobody activated it", component: mgs.ComponentHostBootFlash, seen: completeLong, st: st(mgs.UpdateComplete, watched, 0, 0), want: WaitTakeover},
		{name: "ours failed: aborted", ours: true, seen: fresh, st: st(mgs.UpdateFailed, watched, 5, 10), want: WaitFailed, abort: true},
		{name: "ours rot error: aborted", ours: true, seen: fresh, st: st(mgs.UpdateRotError, watched, 5, 10), want: WaitFailed, abort: true},
		{name: "foreign failed: aborted, free", seen: fresh, st: st(mgs.UpdateFailed, watched, 5, 10), want: WaitFree, abort: true},
		{name: "ours aborted by someone", ours: true, seen: fresh, st: st(mgs.UpdateAborted, watched, 5, 10), want: WaitAborted},
		{name: "foreign aborted: free", seen: fresh, st: st(mgs.UpdateAborted, watched, 5, 10), want: WaitFree},
		{name: "ours in progress", ours: true, seen: fresh, st: st(mgs.UpdateInProgress, watched, 100, 1000), want: ""},
		{name: "ours stuck: aborted", ours: true, seen: stale, st: st(mgs.UpdateInProgress, watched, 100, 1000), want: WaitStuck, abort: true},
		{name: "ours moving again after a long pause", ours: true, seen: stale, st: st(mgs.UpdateInProgress, watched, 200, 1000), want: ""},
		{name: "foreign stuck: aborted", seen: stale, st: st(mgs.UpdateInProgress, watched, 100, 1000), want: WaitStuck, abort: true},
		{name: "ours moved: checkpoint due", ours: true, seen: fresh, st: st(mgs.UpdateInProgress, watched, 300, 1000), checkEach: time.Minute, want: WaitCheckpoint},
		{name: "ours did not move: no checkpoint", ours: true, seen: idle, st: st(mgs.UpdateInProgress, watched, 0, 1000), checkEach: time.Minute, want: ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			comp := c.component
			if comp == "" {
				comp = mgs.ComponentSP
			}
			in := WaitUpdateInput{Component: comp, UpdateID: watched, Ours: c.ours, ProgressTimeout: progressTimeout,
				TakeoverTimeout: takeoverTimeout, CheckpointEvery: c.checkEach}
			step := decideWait(in, c.seen, c.st, t0, now)
			assert.Equal(t, c.want, step.seen.Outcome)
			assert.Equal(t, c.abort, step.abort)
			assert.Equal(t, c.st, step.seen.Status)
		})
	}
}

// The wait's record carries over polls: progress moves the last-change
// time, a complete{id} without byte counts keeps the last ones, and our
// complete update counts as fully delivered.
func TestDecideWaitKeepsTheRecord(t *testing.T) {
	id := uuid.MustParse("11111111-1111-4111-8111-111111111111")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := WaitUpdateInput{Component: mgs.ComponentSP, UpdateID: id, Ours: true, ProgressTimeout: time.Minute}
	seen := WaitUpdateResult{LastChange: t0}

	step := decideWait(in, seen, mgs.UpdateStatus{State: mgs.UpdateInProgress, ID: id, BytesReceived: 400, TotalBytes: 1000}, t0, t0.Add(time.Second))
	assert.Equal(t, WaitUpdateResult{Status: step.seen.Status, Bytes: 400, Total: 1000, LastBytes: 400, LastChange: t0.Add(time.Second)}, step.seen)

	prep := mgs.UpdateStatus{State: mgs.UpdatePreparing, ID: id, Progress: &mgs.PreparationProgress{Current: 3, Total: 10}}
	step = decideWait(in, WaitUpdateResult{LastChange: t0}, prep, t0, t0.Add(2*time.Second))
	assert.EqualValues(t, -7, step.seen.LastBytes, "erase progress counts as progress")
	assert.Equal(t, t0.Add(2*time.Second), step.seen.LastChange)

	seen = decideWait(in, WaitUpdateResult{LastChange: t0}, mgs.UpdateStatus{State: mgs.UpdateInProgress, ID: id, BytesReceived: 400, TotalBytes: 1000}, t0, t0.Add(time.Second)).seen
	done := decideWait(in, seen, mgs.UpdateStatus{State: mgs.UpdateComplete, ID: id}, t0, t0.Add(3*time.Second))
	assert.Equal(t, WaitComplete, done.seen.Outcome)
	assert.EqualValues(t, 1000, done.seen.Bytes, "complete: everything delivered")
	assert.EqualValues(t, 1000, done.seen.Total, "complete{id} has no counts: the last total stays")
}
