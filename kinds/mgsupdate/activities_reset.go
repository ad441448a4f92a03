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

// --- SP post-update ---

// PostUpdateInput resets the SP to activate a completed update.
type PostUpdateInput struct {
	SP mgs.SpIdentifier `json:"sp"`
	// Serial is the SP's (the precheck checked it). With RackRelease (a
	// takeover of someone else's update) the first reset waits for its
	// rack's target release to be read, and a release stops it
	// (refuseIfReleased). With NoteRelease (our own delivered update) a
	// release set meanwhile is only recorded (releaseAppeared): the image
	// is armed, so it is activated.
	Serial      string `json:"serial,omitempty"`
	RackRelease bool   `json:"rackRelease,omitempty"`
	NoteRelease bool   `json:"noteRelease,omitempty"`
	// UpdateID is the completed update to activate (ours, or a foreign one
	// being taken over).
	UpdateID      uuid.UUID `json:"updateId"`
	AttemptID     uuid.UUID `json:"attemptId"`
	TargetVersion string    `json:"targetVersion"`
	// ResetRetryInterval is the wait before re-checking and resetting again
	// after a reset whose reply was lost.
	ResetRetryInterval time.Duration `json:"resetRetryInterval"`
	// NewVersionTimeout bounds the wait for the SP to report TargetVersion
	// after a reset.
	NewVersionTimeout time.Duration `json:"newVersionTimeout"`
	PollInterval      time.Duration `json:"pollInterval"`
}

// Post-update outcomes.
const (
	PostActivated    = "activated"     // the SP runs TargetVersion
	PostNotActivated = "not_activated" // the update is gone and the SP runs something else
)

// PostUpdateResult says whether the new version is active.
type PostUpdateResult struct {
	// UpdateID is the update the reset activates (the workflow rejects a
	// result that names another: results.go).
	UpdateID uuid.UUID `json:"updateId"`
	Outcome  string    `json:"outcome"`
	Active   string    `json:"active"`
	Resets   int       `json:"resets"`
	// Release is a target release the rack got while our update was
	// delivered (NoteRelease), which did not stop the reset.
	Release *RackRelease `json:"release,omitempty"`
}

// SPPostUpdate resets the SP (through another MGS when one refuses to
// reset its own sled's SP) and waits for the new active version. Before
// every reset it re-checks: a reset whose reply was lost but which
// happened is never repeated.
func (a *MGSActivities) SPPostUpdate(ctx context.Context, in PostUpdateInput) (PostUpdateResult, error) {
	out := PostUpdateResult{UpdateID: in.UpdateID}
	set, err := a.set()
	if err != nil {
		return out, err
	}
	if in.PollInterval <= 0 {
		in.PollInterval = time.Second
	}
	deadline := time.Now().Add(in.NewVersionTimeout)
	for {
		activity.RecordHeartbeat(ctx, out)
		cab, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.Caboose, error) {
			return c.Caboose(ctx, in.SP, mgs.ComponentSP, 0)
		})
		if err == nil {
			out.Active = cab.Version
			if cab.Version == in.TargetVersion {
				out.Outcome = PostActivated
				a.event(ctx, in.AttemptID, "activated", "", fmt.Sprintf("SP %s runs %s after %d reset(s) by this attempt", in.SP, cab.Version, out.Resets))
				return out, nil
			}
		} else if mgs.Classify(err) == mgs.ClassFatal {
			return out, mgsErr(err, "read active SP version")
		}
		if err != nil {
			// The SP is not answering (rebooting): wait for it, asking at
			// least every second (its return is what the update waits for;
			// a read of a rebooting SP costs MGS one message).
			if time.Now().After(deadline) {
				return out, fmt.Errorf("SP %s did not come back with version %s within %s: %w", in.SP, in.TargetVersion, in.NewVersionTimeout, err)
			}
			if err := activities.SleepCtx(ctx, min(in.PollInterval, time.Second)); err != nil {
				return out, err
			}
			continue
		}
		st, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.UpdateStatus, error) {
			return c.UpdateStatus(ctx, in.SP, mgs.ComponentSP)
		})
		if err != nil {
			if mgs.Classify(err) == mgs.ClassFatal {
				return out, mgsErr(err, "read update status")
			}
			if err := activities.SleepCtx(ctx, in.PollInterval); err != nil {
				return out, err
			}
			continue
		}
		if st.State != mgs.UpdateComplete || st.ID != in.UpdateID {
			// Nothing left to activate: the SP was reset (by us or
			// someone) and runs another version.
			out.Outcome = PostNotActivated
			a.event(ctx, in.AttemptID, "not-activated", "", fmt.Sprintf("SP %s runs %s; update %s is no longer complete (%s)", in.SP, out.Active, in.UpdateID, st))
			return out, nil
		}
		if in.RackRelease && out.Resets == 0 {
			// Before the first reset only: after one whose reply was lost
			// the SP may already run the update.
			if err := a.refuseIfReleased(ctx, in.SP, in.Serial, fmt.Sprintf("SP %s (serial %s)", in.SP, in.Serial)); err != nil {
				return out, err
			}
		}
		if in.NoteRelease && out.Resets == 0 && out.Release == nil {
			out.Release = a.releaseAppeared(ctx, in)
		}
		err = resetOnce(ctx, set, in.SP)
		out.Resets++
		switch {
		case err == nil:
			a.event(ctx, in.AttemptID, fmt.Sprintf("reset-%d", out.Resets), "", "SP reset to activate "+in.UpdateID.String())
			deadline = time.Now().Add(in.NewVersionTimeout)
		case mgs.Classify(err) == mgs.ClassFatal:
			return out, mgsErr(err, "reset SP")
		default:
			// The reset may or may not have happened (lost reply, MGS down).
			// Wait, then re-check before resetting again.
			a.event(ctx, in.AttemptID, fmt.Sprintf("reset-%d", out.Resets), "", "reset reply lost: "+err.Error())
			if err := activities.SleepCtx(ctx, in.ResetRetryInterval); err != nil {
				return out, err
			}
			deadline = time.Now().Add(in.NewVersionTimeout)
		}
	}
}

// resetOnce asks the MGS instances in turn to reset the SP, moving on only
// when an instance certainly did not do it (mgs.ResetNotSent: it refused
// to reset its own sled's SP, the connection was never made, or it
// answered before talking to the SP). A lost reply, a timeout or a 503
// that may come after the reset (SpCommunicationFailed, Timeout) is
// returned at once: the caller re-reads the SP before resetting again, so
// the SP is never reset twice inside its watchdog window.
func resetOnce(ctx context.Context, set *mgs.Set, sp mgs.SpIdentifier) error {
	var err error
	for _, c := range set.Clients() {
		err = c.Reset(ctx, sp, mgs.ComponentSP)
		if err == nil || !mgs.ResetNotSent(err) {
			return err
		}
	}
	return err
}
