package mgsupdate

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// --- wait ---

// Wait outcomes.
const (
	WaitComplete    = "complete"      // complete{watched id}
	WaitLost        = "lost"          // ours vanished: the SP was reset (status none)
	WaitReplaced    = "replaced"      // the SP now reports another update ID
	WaitFailed      = "failed"        // failed{ours}: aborted by the activity
	WaitAborted     = "aborted"       // aborted{ours} by someone
	WaitStuck       = "stuck"         // no progress within ProgressTimeout: aborted by the activity
	WaitCheckpoint  = "checkpoint"    // still running; progress report for the workflow
	WaitFree        = "free"          // the foreign update ended without activation; the SP is free
	WaitForeignDone = "foreign_reset" // the foreign update completed and someone reset the SP
	WaitTakeover    = "takeover_due"  // the foreign update completed and nobody reset it in time
)

// WaitUpdateInput watches one update (ours, or a foreign one).
type WaitUpdateInput struct {
	SP        mgs.SpIdentifier `json:"sp"`
	Component string           `json:"component"`
	UpdateID  uuid.UUID        `json:"updateId"`
	Ours      bool             `json:"ours"`
	// AttemptID is our ledger attempt (progress is written to it).
	AttemptID       uuid.UUID     `json:"attemptId"`
	PollInterval    time.Duration `json:"pollInterval"`
	ProgressTimeout time.Duration `json:"progressTimeout"`
	TakeoverTimeout time.Duration `json:"takeoverTimeout"`
	// CheckpointEvery makes the activity return a checkpoint so the
	// workflow can show progress (0: never). Keep it coarse.
	CheckpointEvery time.Duration `json:"checkpointEvery"`
	// Carried across checkpoints.
	LastBytes     int64     `json:"lastBytes"`
	LastChange    time.Time `json:"lastChange"`
	CompleteSince time.Time `json:"completeSince"`
}

// WaitUpdateResult is how the watched update ended (or a checkpoint).
type WaitUpdateResult struct {
	// UpdateID is the watched update (the workflow rejects a result that
	// names another: results.go).
	UpdateID      uuid.UUID        `json:"updateId"`
	Outcome       string           `json:"outcome"`
	Status        mgs.UpdateStatus `json:"status"`
	Bytes         int64            `json:"bytes"`
	Total         int64            `json:"total"`
	LastBytes     int64            `json:"lastBytes"`
	LastChange    time.Time        `json:"lastChange"`
	CompleteSince time.Time        `json:"completeSince"`
}

// WaitHeartbeat is the heartbeat detail of the polling activities.
type WaitHeartbeat struct {
	State string `json:"state"`
	Done  int64  `json:"done"`
	Total int64  `json:"total"`
}

// MGSWaitUpdate polls the SP's update status through any MGS until the
// watched update ends, in one heartbeating activity (no history event per
// poll). For our update: complete, lost (none), replaced, failed (aborted
// here), aborted, or stuck (no progress within ProgressTimeout: aborted
// here). For a foreign update: free, foreign_reset, takeover_due (complete
// and nobody reset it within TakeoverTimeout), replaced, or stuck (aborted
// here).
func (a *MGSActivities) MGSWaitUpdate(ctx context.Context, in WaitUpdateInput) (WaitUpdateResult, error) {
	out := WaitUpdateResult{UpdateID: in.UpdateID, LastBytes: in.LastBytes, LastChange: in.LastChange, CompleteSince: in.CompleteSince}
	set, err := a.set()
	if err != nil {
		return out, err
	}
	if in.PollInterval <= 0 {
		in.PollInterval = 3 * time.Second
	}
	if out.LastChange.IsZero() {
		out.LastChange = time.Now()
	}
	began := time.Now()
	var clock deliveryClock
	pw := progressWriter{a: a, attempt: in.AttemptID}
	phase := "updating"
	if !in.Ours {
		phase = "waiting-for-concurrent-update"
	}
	for {
		st, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.UpdateStatus, error) {
			return c.UpdateStatus(ctx, in.SP, in.Component)
		})
		now := time.Now()
		switch {
		case err != nil && mgs.Classify(err) == mgs.ClassFatal:
			return out, mgsErr(err, "read update status")
		case err != nil:
			// Unreachable (the SP may be rebooting): keep polling, but that
			// is no progress either.
			activity.RecordHeartbeat(ctx, WaitHeartbeat{State: "unreachable", Done: out.Bytes, Total: out.Total})
			if now.Sub(out.LastChange) > in.ProgressTimeout && in.ProgressTimeout > 0 {
				return out, fmt.Errorf("SP %s unreachable through every MGS for %s: %w", in.SP, in.ProgressTimeout, err)
			}
		default:
			step := decideWait(in, out, st, began, now)
			out = step.seen
			if step.abort {
				if _, err := abortUpdate(ctx, set, in.SP, in.Component, st.ID); err != nil {
					return out, err
				}
			}
			if out.Outcome == WaitComplete {
				pw.write(ctx, phase, out.Total, out.Total, true)
			}
			if out.Outcome != "" {
				return out, nil
			}
			activity.RecordHeartbeat(ctx, WaitHeartbeat{State: string(st.State), Done: out.Bytes, Total: out.Total})
			if in.Ours {
				pw.write(ctx, phase, out.Bytes, out.Total, false)
			}
		}
		pause := in.PollInterval
		if in.Ours && err == nil {
			pause = clock.next(in.PollInterval, out.Bytes, out.Total, now)
		}
		if err := activities.SleepCtx(ctx, pause); err != nil {
			return out, err
		}
	}
}
