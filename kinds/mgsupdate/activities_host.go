package mgsupdate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// --- the recovery (mupdate) path ---
//
// These activities boot a host with its phase 2 fetched through the SP
// (phase2_recovery_mode): wicketd's recovery path, not the host OS update
// (which writes phase 2 to disk through sled-agent: activities_hostdisk.go,
// activities_hostboot.go). The recovery operation (hostrecovery.go, kind
// host-recovery) uses them with Transient set: the trampoline's slot is
// active for one boot only.

// HostPostUpdateInput activates a written phase 1 slot.
type HostPostUpdateInput struct {
	SP        mgs.SpIdentifier `json:"sp"`
	AttemptID uuid.UUID        `json:"attemptId"`
	NewSlot   uint16           `json:"newSlot"`
	Phase2    ArtifactRef      `json:"phase2"`
	// Transient makes NewSlot active without persist (wicketd's mupdate:
	// the trampoline boots once, the persistent slot stays the installed
	// OS's). The host's boot consumes the choice, so the SP's active slot
	// then reads the persistent one again.
	Transient bool `json:"transient,omitempty"`
}

// HostPostUpdate makes the phase 2 image available on every reachable MGS
// (the SP fetches from whichever answers first), powers the host off (A2),
// sets the new slot active with persist, clears every MGS's phase 2
// record, sets phase2_recovery_mode in the SP's startup options (so the
// host fetches phase 2 through the SP) and powers the host on (A0). A
// retry after the power-on does not cycle again (alreadyPoweredOn).
func (a *MGSActivities) HostPostUpdate(ctx context.Context, in HostPostUpdateInput) error {
	set, err := a.set()
	if err != nil {
		return err
	}
	// MGS names a phase 2 image by its header's SHA-256, not the file's.
	id, err := a.phase2ID(ctx, in.Phase2)
	if err != nil {
		return err
	}
	uploaded := 0
	var lastErr error
	for _, c := range set.Clients() {
		rc, size, err := a.openArtifact(ctx, in.Phase2)
		if err != nil {
			return err
		}
		sum, err := c.UploadHostPhase2(ctx, heartbeatReader(ctx, rc), size)
		rc.Close()
		switch {
		case err == nil && !strings.EqualFold(sum, id):
			return mgsFatal(failure.ArtifactMismatch, "MGS %s names phase 2 %s (artifact %s) as %s, its header as %s",
				c.BaseURL(), in.Phase2.Version, in.Phase2.SHA256, sum, id)
		case err == nil:
			uploaded++
		case mgs.Classify(err) == mgs.ClassFatal:
			return mgsErr(err, "upload phase 2 to "+c.BaseURL())
		default:
			lastErr = err
		}
	}
	if uploaded == 0 {
		return fmt.Errorf("no MGS took the phase 2 image: %w", lastErr)
	}
	a.event(ctx, in.AttemptID, "phase2-upload", "", fmt.Sprintf("phase 2 %s (artifact %s) cached on %d MGS instance(s)", id, in.Phase2.SHA256, uploaded))

	// The SP's state is the marker of the power cycle: the slot and the
	// recovery mode are set only while the host is off (A2), so a host
	// that is on with both set has been powered on by this step already.
	// A retry (lost reply, dead worker) does not cycle a booting host
	// again.
	done, err := a.alreadyPoweredOn(ctx, set, in)
	if err != nil || done {
		return err
	}
	if err := set.Do(ctx, func(ctx context.Context, c *mgs.Client) error { return c.SetPowerState(ctx, in.SP, mgs.PowerA2) }); err != nil {
		return mgsErr(err, "set host power state A2")
	}
	if err := set.Do(ctx, func(ctx context.Context, c *mgs.Client) error {
		return c.SetActiveSlot(ctx, in.SP, mgs.ComponentHostBootFlash, in.NewSlot, !in.Transient)
	}); err != nil {
		return mgsErr(err, "set active host boot flash slot")
	}
	// Each MGS keeps its own record of the phase 2 requests it served:
	// clear them all, so an earlier fetch is not taken for this one.
	for _, c := range set.Clients() {
		if err := c.ClearHostPhase2Progress(ctx, in.SP); err != nil && mgs.Classify(err) == mgs.ClassFatal {
			return mgsErr(err, "clear phase 2 progress on "+c.BaseURL())
		}
	}
	// Without phase2_recovery_mode the host would boot the old phase 2
	// from its disk.
	if err := setRecoveryMode(ctx, set, in.SP, true); err != nil {
		return err
	}
	if err := set.Do(ctx, func(ctx context.Context, c *mgs.Client) error { return c.SetPowerState(ctx, in.SP, mgs.PowerA0) }); err != nil {
		return mgsErr(err, "set host power state A0")
	}
	a.event(ctx, in.AttemptID, "power-cycle", "", fmt.Sprintf("host powered off, slot %d active (%s), phase 2 recovery mode on, host powered on", in.NewSlot, persistNote(in.Transient)))
	return nil
}

// HostCycledOntoSlot reports whether HostPostUpdate got as far as
// powering the host on with the new slot active (persisted): from then on
// the host boots the new image and nothing is left to abort. The workflow
// asks after a cancel stopped HostPostUpdate, whose reply alone cannot say
// how far it got.
func (a *MGSActivities) HostCycledOntoSlot(ctx context.Context, in HostPostUpdateInput) (bool, error) {
	set, err := a.set()
	if err != nil {
		return false, err
	}
	return cycledOntoSlot(ctx, set, in)
}

// alreadyPoweredOn reports whether an earlier run of HostPostUpdate got as
// far as powering the host on (cycledOntoSlot), and records it.
func (a *MGSActivities) alreadyPoweredOn(ctx context.Context, set *mgs.Set, in HostPostUpdateInput) (bool, error) {
	done, err := cycledOntoSlot(ctx, set, in)
	if err != nil || !done {
		return false, err
	}
	a.event(ctx, in.AttemptID, "power-cycle", "", fmt.Sprintf("host already on with slot %d and recovery mode: not cycled again", in.NewSlot))
	return true, nil
}

func persistNote(transient bool) string {
	if transient {
		return "for one boot, not persisted"
	}
	return "persist"
}

// cycledOntoSlot: the host is on (A0), the new slot is active and
// phase2_recovery_mode is set. The slot and the recovery mode are set only
// while the host is off, so this is HostPostUpdate's power-on done. A
// transient slot is consumed by the boot, so then the slot is not asked:
// recovery mode on a powered host is the marker (it is cleared once the
// host booted).
func cycledOntoSlot(ctx context.Context, set *mgs.Set, in HostPostUpdateInput) (bool, error) {
	ps, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.PowerState, error) { return c.PowerState(ctx, in.SP) })
	if err != nil {
		return false, mgsErr(err, "read host power state")
	}
	if ps != mgs.PowerA0 {
		return false, nil
	}
	opts, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.HostStartupOptions, error) {
		return c.StartupOptions(ctx, in.SP)
	})
	if err != nil {
		return false, mgsErr(err, "read host startup options")
	}
	if in.Transient || !opts.Phase2RecoveryMode {
		return opts.Phase2RecoveryMode, nil
	}
	slot, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (uint16, error) {
		return c.ActiveSlot(ctx, in.SP, mgs.ComponentHostBootFlash)
	})
	if err != nil {
		return false, mgsErr(err, "read active host boot flash slot")
	}
	return slot == in.NewSlot, nil
}

// setRecoveryMode sets or clears phase2_recovery_mode in the SP's host
// startup options, keeping the other options (MGS takes the whole
// object).
func setRecoveryMode(ctx context.Context, set *mgs.Set, sp mgs.SpIdentifier, on bool) error {
	opts, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.HostStartupOptions, error) {
		return c.StartupOptions(ctx, sp)
	})
	if err != nil {
		return mgsErr(err, "read host startup options")
	}
	if opts.Phase2RecoveryMode == on {
		return nil
	}
	opts.Phase2RecoveryMode = on
	if err := set.Do(ctx, func(ctx context.Context, c *mgs.Client) error { return c.SetStartupOptions(ctx, sp, opts) }); err != nil {
		return mgsErr(err, fmt.Sprintf("set phase2_recovery_mode=%t in the host startup options", on))
	}
	return nil
}

// HostWaitBootInput follows the host's boot and phase 2 fetch.
type HostWaitBootInput struct {
	SP        mgs.SpIdentifier `json:"sp"`
	AttemptID uuid.UUID        `json:"attemptId"`
	NewSlot   uint16           `json:"newSlot"`
	// Phase2ID is the phase 2 image's ID at MGS (PrecheckResult.Phase2ID:
	// its header's SHA-256), the image_id host-phase2-progress reports.
	Phase2ID string `json:"phase2Id"`
	// Timeout bounds the whole boot (phase 1 + phase 2 fetch), counted
	// from Since.
	Timeout         time.Duration `json:"timeout"`
	Since           time.Time     `json:"since"`
	PollInterval    time.Duration `json:"pollInterval"`
	CheckpointEvery time.Duration `json:"checkpointEvery"`
	// Transient: NewSlot was made active for one boot (HostPostUpdateInput.
	// Transient); the boot consumes the choice, so the SP's active slot is
	// not what tells the boot happened.
	Transient bool `json:"transient,omitempty"`
}

// HostWaitBootResult is the boot's end (or a checkpoint).
type HostWaitBootResult struct {
	Booted bool      `json:"booted"`
	Offset uint64    `json:"offset"`
	Total  uint64    `json:"total"`
	Since  time.Time `json:"since"`
}

// HostWaitBoot follows the host's phase 2 fetch by asking EVERY MGS:
// today's MGS reports only the requests it served itself, and the SP may
// have attached to any of them; where the SP keeps its own record, every
// MGS answers with it. The freshest record for our image counts (records
// for another image are stale and ignored); its offset is the end of the
// last chunk, so a finished fetch reads 100%. Done when the host fetched
// all of it and the SP reports the new slot active and the host powered
// (A0); then phase2_recovery_mode is cleared, so the next boot uses the
// disk again.
func (a *MGSActivities) HostWaitBoot(ctx context.Context, in HostWaitBootInput) (HostWaitBootResult, error) {
	out := HostWaitBootResult{Since: in.Since}
	set, err := a.set()
	if err != nil {
		return out, err
	}
	if out.Since.IsZero() {
		out.Since = time.Now()
	}
	if in.PollInterval <= 0 {
		in.PollInterval = 3 * time.Second
	}
	began := time.Now()
	var startOffset uint64
	first := true
	pw := progressWriter{a: a, attempt: in.AttemptID}
	phase := "host-boot"
	if in.Transient {
		phase = string(MGSPhaseRecoveryFetch)
	}
	for {
		p, ok, err := freshestPhase2(ctx, set, in.SP, in.Phase2ID)
		if err != nil {
			return out, err
		}
		if ok {
			out.Offset, out.Total = p.Offset, p.TotalSize
			if first {
				startOffset, first = p.Offset, false
			}
			if p.TotalSize > 0 && p.Offset >= p.TotalSize {
				booted, err := a.bootedFromSlot(ctx, set, in)
				if err != nil {
					return out, err
				}
				if booted {
					out.Booted = true
					pw.write(ctx, phase, int64(out.Offset), int64(out.Total), true)
					return out, nil
				}
			}
		}
		if in.Timeout > 0 && time.Since(out.Since) > in.Timeout {
			// Leave no recovery mode behind: the host's next boot would
			// wait for a phase 2 nobody serves. Best effort (the MGS may
			// be unreachable, which may be why the boot failed).
			_ = setRecoveryMode(ctx, set, in.SP, false)
			return out, mgsFatal(failure.HostBootTimeout,
				"host of %s did not boot slot %d with phase 2 %s within %s (phase 2 fetched %d of %d bytes)",
				in.SP, in.NewSlot, in.Phase2ID, in.Timeout, out.Offset, out.Total)
		}
		if in.CheckpointEvery > 0 && time.Since(began) >= in.CheckpointEvery && !first && out.Offset != startOffset {
			return out, nil
		}
		activity.RecordHeartbeat(ctx, WaitHeartbeat{State: "phase2-fetch", Done: int64(out.Offset), Total: int64(out.Total)})
		pw.write(ctx, phase, int64(out.Offset), int64(out.Total), false)
		if err := activities.SleepCtx(ctx, in.PollInterval); err != nil {
			return out, err
		}
	}
}

// bootedFromSlot checks what the SP reports once the fetch is complete:
// the new slot active and the host powered. It then clears the recovery
// mode and records the boot.
func (a *MGSActivities) bootedFromSlot(ctx context.Context, set *mgs.Set, in HostWaitBootInput) (bool, error) {
	slot, serr := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (uint16, error) {
		return c.ActiveSlot(ctx, in.SP, mgs.ComponentHostBootFlash)
	})
	ps, perr := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.PowerState, error) {
		return c.PowerState(ctx, in.SP)
	})
	for _, err := range []error{serr, perr} {
		if err != nil && mgs.Classify(err) == mgs.ClassFatal {
			return false, mgsErr(err, "read host state")
		}
	}
	if serr != nil || perr != nil || (slot != in.NewSlot && !in.Transient) || ps != mgs.PowerA0 {
		return false, nil
	}
	if err := setRecoveryMode(ctx, set, in.SP, false); err != nil {
		return false, err
	}
	a.event(ctx, in.AttemptID, "host-booted", "", fmt.Sprintf("host booted slot %d and fetched phase 2 %s; recovery mode cleared", in.NewSlot, in.Phase2ID))
	return true, nil
}

// freshestPhase2 asks every MGS for the SP's phase 2 progress and returns
// the freshest record for image sha256 (ok false: none). Unreachable
// instances are skipped; a malformed or refused answer is fatal.
func freshestPhase2(ctx context.Context, set *mgs.Set, sp mgs.SpIdentifier, sha256 string) (mgs.HostPhase2Progress, bool, error) {
	var best mgs.HostPhase2Progress
	found := false
	for _, c := range set.Clients() {
		p, err := c.HostPhase2Progress(ctx, sp)
		if err != nil {
			if mgs.Classify(err) == mgs.ClassFatal {
				return best, false, mgsErr(err, "read host phase 2 progress")
			}
			if ctx.Err() != nil {
				return best, false, ctx.Err()
			}
			continue
		}
		if !p.Available || !strings.EqualFold(p.ImageSHA256, sha256) {
			continue
		}
		if !found || p.Age < best.Age || (p.Age == best.Age && p.Offset > best.Offset) {
			best, found = p, true
		}
	}
	return best, found, nil
}
