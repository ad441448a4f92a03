package mgsupdate

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// The workflow is cancelled while an attempt's intent is being written,
// and the write commits after the workflow stopped waiting for it. The ledger must end with that attempt cancelled and
// nothing left active on the target, whichever attempt it was.
func TestMGSCancelWhileRecordingAttemptEndsThatAttempt(t *testing.T) {
	// The write is a local activity: the cancel reaches its context while
	// it runs, the write commits anyway, and the workflow waits for it to
	// return, so it cannot commit after the end.
	for _, tc := range []struct {
		name string
		// recordsBefore are the record-attempt calls that complete normally
		// before the one the cancel races with.
		recordsBefore int
		host          bool
	}{
		{name: "first attempt", recordsBefore: 0},
		{name: "next attempt", recordsBefore: 1},
		{name: "host flash first attempt", recordsBefore: 0, host: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMGSTest(t)
			if tc.recordsBefore > 0 {
				// Attempt 1's update is lost: attempt 2 is recorded.
				m.script("MGSWaitUpdate", waitDone(WaitLost))
			}
			late := m.lateLocalRecord()
			scripts := []any{}
			for range tc.recordsBefore {
				scripts = append(scripts, m.record)
			}
			scripts = append(scripts, late.racing, late.after)
			m.script("MGSRecordAttempt", scripts...)

			var err error
			if tc.host {
				m.script("MGSPrecheck", hostAt(1, "1.0.0", "ab"))
				_, err = m.runHost(hostInput())
			} else {
				_, err = m.runSP(spInput())
			}
			var ce *temporal.CanceledError
			require.ErrorAs(t, err, &ce)
			<-late.done

			rows := replayLedger(m.records)
			raced := late.in.Next
			require.NotNil(t, raced)
			require.Contains(t, rows, raced.ID, "the attempt being recorded is in the ledger")
			assert.Equal(t, ledger.StateCancelled, rows[raced.ID], "the attempt being recorded ends cancelled")
			for id, st := range rows {
				assert.True(t, st.Terminal(), "attempt %s left %s", id, st)
			}
		})
	}
}

// record is MGSRecordAttempt answering at once.
func (m *mgsTest) record(_ context.Context, in activities.RecordAttemptInput) error {
	m.mu.Lock()
	m.records = append(m.records, in)
	m.mu.Unlock()
	return nil
}

// lateRecordScript is a record-attempt call that races a cancel.
type lateRecordScript struct {
	racing, after func(context.Context, activities.RecordAttemptInput) error
	// done is closed once the late write committed; in is what it wrote.
	done chan struct{}
	in   activities.RecordAttemptInput
}

// lateLocalRecord scripts a local record-attempt write that the cancel
// reaches while it runs: the write commits anyway and the activity returns
// the cancellation.
func (m *mgsTest) lateLocalRecord() *lateRecordScript {
	l := &lateRecordScript{done: make(chan struct{}), after: m.record}
	l.racing = func(ctx context.Context, in activities.RecordAttemptInput) error {
		m.mu.Lock()
		l.in = in
		m.mu.Unlock()
		m.env.CancelWorkflow()
		<-ctx.Done()
		_ = m.record(ctx, in)
		close(l.done)
		return ctx.Err()
	}
	return l
}

// replayLedger applies record-attempt inputs in order as the ledger does:
// a finish ends only an active attempt, an intent is idempotent by ID and
// refused while another attempt of the target is active.
func replayLedger(records []activities.RecordAttemptInput) map[uuid.UUID]ledger.State {
	rows := map[uuid.UUID]ledger.State{}
	finish := func(f *ledger.Finish) {
		if st, ok := rows[f.AttemptID]; ok && !st.Terminal() {
			rows[f.AttemptID] = f.State
		}
	}
	for _, r := range records {
		if r.Finish != nil {
			finish(r.Finish)
		}
		if r.Next != nil {
			if _, ok := rows[r.Next.ID]; !ok {
				busy := false
				for _, st := range rows {
					busy = busy || !st.Terminal()
				}
				if busy {
					continue // TargetBusy: nothing more of this write happens
				}
				rows[r.Next.ID] = ledger.StatePending
			}
		}
		if r.FinishNext != nil {
			finish(r.FinishNext)
		}
	}
	return rows
}
