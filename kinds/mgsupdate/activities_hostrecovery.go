package mgsupdate

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// HostRecoveryRestoreInput undoes a recovery boot's setup.
type HostRecoveryRestoreInput struct {
	SP        mgs.SpIdentifier `json:"sp"`
	AttemptID uuid.UUID        `json:"attemptId"`
	// Installed is the persistent slot at the precheck: the installed OS.
	Installed uint16 `json:"installed"`
}

// HostRecoveryRestore leaves the SP as it was before a recovery: the next
// boot on the installed slot (a transient choice of the trampoline's slot
// that no boot consumed yet is replaced, without persist: the persistent
// choice was never touched) and phase2_recovery_mode cleared, so the
// host's next power cycle boots its installed OS from its disk. Safe to
// run when the recovery never got that far. The host is not power-cycled:
// a host mid-boot of the trampoline, or one whose fetch failed, is left
// for the operator to cycle (the sled may be what they are recovering).
func (a *MGSActivities) HostRecoveryRestore(ctx context.Context, in HostRecoveryRestoreInput) error {
	set, err := a.set()
	if err != nil {
		return err
	}
	if err := set.Do(ctx, func(ctx context.Context, c *mgs.Client) error {
		return c.SetActiveSlot(ctx, in.SP, mgs.ComponentHostBootFlash, in.Installed, false)
	}); err != nil {
		return mgsErr(err, fmt.Sprintf("choose host boot flash slot %d for the next boot", in.Installed))
	}
	if err := setRecoveryMode(ctx, set, in.SP, false); err != nil {
		return err
	}
	a.event(ctx, in.AttemptID, "recovery-restore", "", fmt.Sprintf("phase 2 recovery mode cleared; the next boot uses slot %d, the installed OS", in.Installed))
	return nil
}
