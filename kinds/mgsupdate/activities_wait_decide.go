package mgsupdate

import (
	"time"

	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// waitStep is what one poll of MGSWaitUpdate decided.
type waitStep struct {
	// seen is the wait's record after this poll (byte counts, when the
	// progress last moved, since when the update is complete); its
	// Outcome is set when the wait ends ("": poll on).
	seen WaitUpdateResult
	// abort: abort the watched update before returning the outcome.
	abort bool
}

// decideWait is MGSWaitUpdate's status→outcome decision, a pure function:
// the watched update (in), what the wait saw so far (seen; began is when
// this leg of the wait started), and the SP's status st read at now.
func decideWait(in WaitUpdateInput, seen WaitUpdateResult, st mgs.UpdateStatus, began, now time.Time) waitStep {
	seen.Status = st
	end := func(outcome string, abort bool) waitStep {
		seen.Outcome = outcome
		return waitStep{seen: seen, abort: abort}
	}
	if st.State == mgs.UpdateNone {
		switch {
		case in.Ours:
			return end(WaitLost, false) // the SP was reset mid-delivery
		case !seen.CompleteSince.IsZero():
			return end(WaitForeignDone, false) // someone activated it
		}
		return end(WaitFree, false)
	}
	if st.ID != in.UpdateID {
		return end(WaitReplaced, false)
	}
	progress := int64(st.BytesReceived)
	if st.State == mgs.UpdatePreparing && st.Progress != nil {
		progress = int64(st.Progress.Current) - int64(st.Progress.Total) // erase progress also counts
	}
	if progress != seen.LastBytes {
		seen.LastBytes, seen.LastChange = progress, now
	}
	if st.TotalBytes > 0 { // complete{id} carries no byte counts: keep the last ones
		seen.Bytes, seen.Total = int64(st.BytesReceived), int64(st.TotalBytes)
	}
	switch st.State {
	case mgs.UpdateComplete:
		switch {
		case in.Ours:
			seen.Bytes = seen.Total
			return end(WaitComplete, false)
		}
		// Someone else's complete update, of the SP or the host flash
		// (MGS would take a new host flash update over it): its driver
		// activates it, or after the takeover timeout we do (omicron
		// nexus/mgs-updates/src/driver_update.rs, apply_update).
		if seen.CompleteSince.IsZero() {
			seen.CompleteSince = now
		}
		if now.Sub(seen.CompleteSince) > in.TakeoverTimeout {
			return end(WaitTakeover, false)
		}
	case mgs.UpdateFailed, mgs.UpdateRotError:
		if in.Ours {
			return end(WaitFailed, true)
		}
		return end(WaitFree, true)
	case mgs.UpdateAborted:
		if in.Ours {
			return end(WaitAborted, false)
		}
		return end(WaitFree, false)
	case mgs.UpdatePreparing, mgs.UpdateInProgress:
		if in.ProgressTimeout > 0 && now.Sub(seen.LastChange) > in.ProgressTimeout {
			return end(WaitStuck, true)
		}
		if in.CheckpointEvery > 0 && now.Sub(began) >= in.CheckpointEvery && seen.LastBytes != in.LastBytes {
			return end(WaitCheckpoint, false)
		}
	}
	return waitStep{seen: seen}
}
