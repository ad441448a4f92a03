package mgsupdate

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/workflow"
)

// wait watches an update (ours or someone else's) until it ends, in one
// heartbeating activity per leg; checkpoints refresh the progress query.
// The first leg of our update's wait may have run in the start activity
// (begun).
func (u *mgsUpdate) wait(ctx workflow.Context, id uuid.UUID, ours bool) (WaitUpdateResult, error) {
	in := u.waitInput(id, ours)
	begun := u.begun
	u.begun = nil
	for n := 0; ; n++ {
		if n >= maxCheckpoints {
			in.CheckpointEvery = 0
		}
		var wr WaitUpdateResult
		if n == 0 && begun != nil && ours {
			wr = *begun // checked with the start
		} else {
			var err error
			wr, err = checked(ctx, u, "MGSWaitUpdate", func() workflow.Future {
				return workflow.ExecuteActivity(u.longOpts(ctx, u.waitBound(), "wait for the update"), mgsActs.MGSWaitUpdate, in)
			}, checkWait(id, ours))
			if err != nil {
				return wr, err
			}
		}
		if ours {
			if wr.Total > 0 { // a checkpoint or the end; a leg that saw no bytes keeps the last count
				u.report.Done, u.report.Total = wr.Bytes, wr.Total
			}
			if wr.Outcome == WaitComplete {
				// Too late to abort a complete update: nothing to undo.
				u.NothingToUndo()
			}
		}
		if wr.Outcome != WaitCheckpoint {
			return wr, nil
		}
		in.LastBytes, in.LastChange, in.CompleteSince = wr.LastBytes, wr.LastChange, wr.CompleteSince
	}
}

func (u *mgsUpdate) waitInput(id uuid.UUID, ours bool) WaitUpdateInput {
	return WaitUpdateInput{
		SP: u.sp, Component: u.component, UpdateID: id, Ours: ours, AttemptID: u.AttemptID(),
		PollInterval: u.timing.PollInterval, ProgressTimeout: u.timing.ProgressTimeout,
		TakeoverTimeout: u.timing.TakeoverTimeout, CheckpointEvery: u.timing.CheckpointEvery,
	}
}

// waitBound bounds one leg of a wait (and its retries: longOpts).
func (u *mgsUpdate) waitBound() time.Duration {
	return waitLegFactor * (u.timing.ProgressTimeout + u.timing.TakeoverTimeout)
}

// waitReason says why our update's wait ended the attempt.
func waitReason(wr WaitUpdateResult) string {
	switch wr.Outcome {
	case WaitLost:
		return "update lost: the SP reports no update (it was reset mid-delivery)"
	case WaitFailed:
		return "the SP reported " + wr.Status.String() + " (aborted)"
	case WaitStuck:
		return fmt.Sprintf("no progress at %d/%d bytes within the progress timeout (aborted)", wr.Bytes, wr.Total)
	case WaitAborted:
		return "the update was aborted by someone else"
	case WaitReplaced:
		return "the SP now reports another update (" + wr.Status.String() + ")"
	}
	return "wait ended with " + wr.Outcome
}
