package mgsupdate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
)

// HostBootInput boots the host on phase 1 slot Slot.
type HostBootInput struct {
	SP        mgs.SpIdentifier `json:"sp"`
	Serial    string           `json:"serial"`
	SledID    uuid.UUID        `json:"sledId,omitzero"`
	AttemptID uuid.UUID        `json:"attemptId"`
	Slot      uint16           `json:"slot"`
	// Why names the boot in the ledger ("activate", "put back").
	Why string `json:"why"`
	// RackRelease: the activation of a new slot, which a target release
	// of the sled's rack stops before the slot moves (refuseIfReleased).
	RackRelease bool `json:"rackRelease,omitempty"`
	// WaitBooted (HostBootedOn): wait until sled-agent runs from the
	// slot's disk or Deadline passes.
	WaitBooted bool `json:"waitBooted,omitempty"`
	// Deadline bounds the wait for sled-agent to report the new boot disk.
	Deadline     time.Time     `json:"deadline"`
	PollInterval time.Duration `json:"pollInterval"`
}

// HostBootResult says how the host came to run on the slot.
type HostBootResult struct {
	// Reset: this step reset the SP (the host was on another disk).
	Reset bool `json:"reset"`
}

// hostBootHeartbeat survives a retry of HostBootSlot: a reset that was
// sent is not sent again (a second reset inside the watchdog window is
// what the rack's driver never does).
type hostBootHeartbeat struct {
	Reset bool   `json:"reset"`
	Last  string `json:"last,omitempty"`
}

// HostBootSlot makes the host run on slot: the slot active with persist,
// then, unless sled-agent already reports that disk as its boot disk (it
// may answer from the other disk, or not at all after a failed boot), one
// reset of the SP (the SP's reset restarts the host: the rack's driver
// does the same, the SP has no host reset), then sled-agent's inventory
// until its boot disk is the slot's. A host that does not come back on it
// by the deadline is HostBootTimeout. The reset is sent once per step, even
// across retries (heartbeat): a reset whose answer was lost or a 503 may
// have happened, and the host's boot is what tells.
func (a *MGSActivities) HostBootSlot(ctx context.Context, in HostBootInput) (HostBootResult, error) {
	var out HostBootResult
	set, err := a.set()
	if err != nil {
		return out, err
	}
	s, err := a.sleds.find(ctx, in.Serial, in.SledID)
	if err != nil {
		return out, err
	}
	var hb hostBootHeartbeat
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &hb)
	}
	out.Reset = hb.Reset
	// A sled-agent that answers for another baseboard is another sled's:
	// refused before the slot moves (one that does not answer is a host
	// still down; bootedOn checks it once it answers).
	if _, err := inventoryOf(ctx, s); isFatal(err) {
		return out, err
	}
	if in.RackRelease && !hb.Reset {
		// Not once the SP was reset: the host may already run the slot.
		if err := a.refuseIfReleased(ctx, in.SP, in.Serial, fmt.Sprintf("the host of sled %s (SP serial %s)", s.id, in.Serial)); err != nil {
			return out, err
		}
	}
	if err := setActiveSlot(ctx, set, in.SP, in.Slot); err != nil {
		return out, err
	}
	disk := sledagent.M2SlotOf(in.Slot)
	poll := in.PollInterval
	if poll <= 0 {
		poll = defaultPollInterval
	}
	for {
		booted, why, err := a.bootedOn(ctx, s, disk)
		if err != nil {
			return out, err
		}
		if booted {
			a.event(ctx, in.AttemptID, "host-"+in.Why, "", fmt.Sprintf("sled %s runs from disk %s (phase 1 slot %d active)%s", s.id, disk, in.Slot, resetNote(out.Reset)))
			return out, nil
		}
		hb.Last = why
		if !hb.Reset {
			// Whether sled-agent answers from the other disk, or not at
			// all (a host that failed to boot, or rebooting): only a
			// restart boots the slot now active.
			err := resetOnce(ctx, set, in.SP)
			if err != nil && mgs.Classify(err) == mgs.ClassFatal {
				return out, mgsErr(err, "reset SP")
			}
			hb.Reset, out.Reset = true, true
			activity.RecordHeartbeat(ctx, hb)
			msg := fmt.Sprintf("SP reset to boot the host on slot %d (disk %s)", in.Slot, disk)
			if err != nil {
				msg += "; the answer was " + err.Error() + ": the reset may have happened, and is not repeated"
			}
			a.event(ctx, in.AttemptID, "host-reset-"+in.Why, "", msg)
		}
		if !in.Deadline.IsZero() && time.Now().After(in.Deadline) {
			return out, mgsFatal(failure.HostBootTimeout, "the host of sled %s did not come back on phase 1 slot %d (disk %s) by %s (last: %s)",
				s.id, in.Slot, disk, in.Deadline.UTC().Format(time.RFC3339), why)
		}
		activity.RecordHeartbeat(ctx, hb)
		if err := activities.SleepCtx(ctx, poll); err != nil {
			return out, err
		}
	}
}

// HostBootedOn reports whether sled-agent runs from the disk of phase 1
// slot in.Slot: the workflow asks after a cancel stopped HostBootSlot,
// and when a precheck finds the target active. With WaitBooted it waits
// until then or in.Deadline (a host someone else's update just restarted
// is still booting: omicron's driver_update.rs, wait_for_update_done,
// waits out MismatchedHostOsActiveSlot and SledAgentInventory).
func (a *MGSActivities) HostBootedOn(ctx context.Context, in HostBootInput) (bool, error) {
	s, err := a.sleds.find(ctx, in.Serial, in.SledID)
	if err != nil {
		return false, err
	}
	for {
		booted, why, err := a.bootedOn(ctx, s, sledagent.M2SlotOf(in.Slot))
		if err != nil || booted || !in.WaitBooted || !time.Now().Before(in.Deadline) {
			return booted, err
		}
		activity.RecordHeartbeat(ctx, why)
		if err := activities.SleepCtx(ctx, cmp.Or(in.PollInterval, 3*time.Second)); err != nil {
			return false, err
		}
	}
}

// onOtherDisk is bootedOn's why when sled-agent answers from another disk.
const onOtherDisk = "sled-agent runs from the other disk"

// bootedOn: sled-agent answers and its boot disk is disk. why says what
// it saw otherwise (onOtherDisk when it answered from the other disk; a
// sled-agent that does not answer is a host still booting, or one that
// failed to). err is an answer no wait changes (a refused API version).
func (a *MGSActivities) bootedOn(ctx context.Context, s hostSled, disk string) (bool, string, error) {
	_, bp, err := bootPartitions(ctx, s)
	if isFatal(err) {
		return false, "", err
	}
	if err != nil {
		return false, "sled-agent: " + err.Error(), nil
	}
	d, err := bp.BootDisk.Value()
	switch {
	case err != nil:
		return false, "boot disk unknown: " + err.Error(), nil
	case d != disk:
		return false, onOtherDisk, nil
	}
	return true, "", nil
}

// setActiveSlot makes slot the active host boot flash slot with persist,
// unless it is already.
func setActiveSlot(ctx context.Context, set *mgs.Set, sp mgs.SpIdentifier, slot uint16) error {
	cur, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (uint16, error) {
		return c.ActiveSlot(ctx, sp, mgs.ComponentHostBootFlash)
	})
	if err != nil {
		return mgsErr(err, "read active host boot flash slot")
	}
	if cur == slot {
		return nil
	}
	if err := set.Do(ctx, func(ctx context.Context, c *mgs.Client) error {
		return c.SetActiveSlot(ctx, sp, mgs.ComponentHostBootFlash, slot, true)
	}); err != nil {
		return mgsErr(err, fmt.Sprintf("set host boot flash slot %d active", slot))
	}
	return nil
}

func resetNote(reset bool) string {
	if reset {
		return " after an SP reset"
	}
	return ""
}

// isFatal: a non-retryable activity error.
func isFatal(err error) bool {
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.NonRetryable()
}
