package mgsupdate

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// PrecheckInput asks for everything a precheck needs, after verifying the
// artifacts' digests (before anything touches a device).
type PrecheckInput struct {
	SP        mgs.SpIdentifier `json:"sp"`
	Component string           `json:"component"`
	// Artifacts are verified before anything touches a device. For
	// host-boot-flash they are phase 1 and then the phase 2 image it boots,
	// whose header is checked too (verifyPhase2).
	Artifacts []ArtifactRef `json:"artifacts"`
	// RackRelease asks for the target release of the device's rack
	// (targetRelease): SP firmware and host flash refuse a device whose
	// rack's update system owns it.
	RackRelease bool `json:"rackRelease,omitempty"`
}

// SlotInfo is one firmware slot as the SP reports it.
type SlotInfo struct {
	Slot uint16 `json:"slot"`
	// Valid: the slot's caboose reads (SP), or its hash does (host boot
	// flash).
	Valid bool `json:"valid"`
	// Version is the caboose version ("" when !Valid; always "" for the
	// host boot flash, which has no caboose).
	Version string `json:"version,omitempty"`
	// SHA256 is the slot's phase 1 hash (host boot flash only).
	SHA256 string `json:"sha256,omitempty"`
}

// PrecheckResult is the SP's identity, its slots and its update status.
type PrecheckResult struct {
	Serial        string           `json:"serial"`
	Model         string           `json:"model"`
	Active        SlotInfo         `json:"active"`
	Inactive      SlotInfo         `json:"inactive"`
	Status        mgs.UpdateStatus `json:"status"`
	ArtifactSizes []int64          `json:"artifactSizes"`
	// Phase2ID is, for host-boot-flash, the phase 2 image's ID at MGS: its
	// header's SHA-256 (the recovery upload's answer, host-phase2-progress's
	// image_id). The artifact's own SHA-256 is its ID at sled-agent.
	Phase2ID string `json:"phase2Id,omitempty"`
	// NexusUpdate is the target blueprint's pending MGS update for this
	// device, if any: Nexus owns it, and fleetsaga does not update it.
	NexusUpdate *NexusUpdate `json:"nexusUpdate,omitempty"`
	// TargetRelease is the target release of the device's rack, when
	// asked for and the rack has one: its update system owns the device.
	TargetRelease *RackRelease `json:"targetRelease,omitempty"`
}

// MGSPrecheck verifies the artifacts (a phase 2 image by its header too),
// then reads the SP's identity, its
// active and inactive slot versions (for host boot flash the active slot
// and both slots' phase 1 hashes) and the component's update status,
// through any MGS; and whether Nexus's target blueprint has a pending MGS
// update for the device (its owner then), and, when asked, the target
// release of its rack.
func (a *MGSActivities) MGSPrecheck(ctx context.Context, in PrecheckInput) (PrecheckResult, error) {
	var out PrecheckResult
	for i, art := range in.Artifacts {
		var n int64
		var err error
		if in.Component == mgs.ComponentHostBootFlash && i == 1 {
			var h mgs.Phase2Header
			n, h, err = a.verifyPhase2(ctx, art)
			out.Phase2ID = h.SHA256
		} else {
			n, err = a.verifyArtifact(ctx, art)
		}
		if err != nil {
			return out, err
		}
		out.ArtifactSizes = append(out.ArtifactSizes, n)
	}
	set, err := a.set()
	if err != nil {
		return out, err
	}
	st, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.SpState, error) { return c.SpState(ctx, in.SP) })
	if err != nil {
		return out, mgsErr(err, "read SP state")
	}
	out.Serial, out.Model = st.SerialNumber, st.Model
	if out.NexusUpdate, err = a.owner.pendingUpdate(ctx, in.SP, st.SerialNumber, st.Model); err != nil {
		return out, err
	}
	if in.RackRelease {
		if out.TargetRelease, err = a.owner.targetRelease(ctx, in.SP, st.SerialNumber); err != nil {
			return out, err
		}
	}
	if in.Component == mgs.ComponentHostBootFlash {
		if err := a.sleds.precheckOwner(ctx, st.SerialNumber); err != nil {
			return out, err
		}
	}
	active, inactive := uint16(0), uint16(1)
	if in.Component == mgs.ComponentHostBootFlash {
		active, err = mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (uint16, error) {
			return c.ActiveSlot(ctx, in.SP, in.Component)
		})
		if err != nil {
			return out, mgsErr(err, "read active host boot flash slot")
		}
		if active > 1 {
			return out, mgsFatal(failure.MGSRejected, "host boot flash active slot %d is not 0 or 1", active)
		}
		inactive = 1 - active
	}
	if in.Component == mgs.ComponentHostBootFlash {
		// The host boot flash has no caboose: each slot is known by the
		// hash of the phase 1 image it holds.
		if out.Active, err = a.hostSlot(ctx, set, in.SP, active); err != nil {
			return out, err
		}
		if out.Inactive, err = a.hostSlot(ctx, set, in.SP, inactive); err != nil {
			return out, err
		}
	} else {
		if out.Active, err = a.slot(ctx, set, in.SP, in.Component, active); err != nil {
			return out, err
		}
		if out.Inactive, err = a.slot(ctx, set, in.SP, in.Component, inactive); err != nil {
			return out, err
		}
	}
	out.Status, err = mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.UpdateStatus, error) {
		return c.UpdateStatus(ctx, in.SP, in.Component)
	})
	return out, mgsErr(err, "read update status")
}

// slot reads a slot's caboose. A slot without a valid image (normal for
// the inactive slot after a reset mid-update) is an answer, not an error:
// today's MGS says so only in a 503's message (mgs.CabooseInvalid).
func (a *MGSActivities) slot(ctx context.Context, set *mgs.Set, sp mgs.SpIdentifier, comp string, slot uint16) (SlotInfo, error) {
	cab, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.Caboose, error) {
		return c.Caboose(ctx, sp, comp, slot)
	})
	if mgs.CabooseInvalid(err) {
		return SlotInfo{Slot: slot}, nil
	}
	if err != nil {
		return SlotInfo{}, mgsErr(err, fmt.Sprintf("read caboose of %s slot %d", comp, slot))
	}
	return SlotInfo{Slot: slot, Valid: true, Version: cab.Version}, nil
}

// hostSlot reads a host boot flash slot by its phase 1 hash.
func (a *MGSActivities) hostSlot(ctx context.Context, set *mgs.Set, sp mgs.SpIdentifier, slot uint16) (SlotInfo, error) {
	sum, err := a.hostSlotHash(ctx, set, sp, slot)
	if err != nil {
		return SlotInfo{}, err
	}
	return SlotInfo{Slot: slot, Valid: true, SHA256: sum}, nil
}

// hostSlotHash is the hash of a host boot flash slot, as MGS's own client
// gets it (omicron clients/gateway-client host_phase_1_flash_hash_calculate_with_timeout):
// read it; if not calculated, start hashing once; then poll once a second
// (hashPollInterval) until hashed. A second "not calculated" means the
// slot's contents changed while it was hashed (a write started): the
// precheck fails and is retried, it does not restart the hash.
func (a *MGSActivities) hostSlotHash(ctx context.Context, set *mgs.Set, sp mgs.SpIdentifier, slot uint16) (string, error) {
	get := func() (mgs.HashStatus, error) {
		hs, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.HashStatus, error) {
			return c.HashGet(ctx, sp, mgs.ComponentHostBootFlash, slot)
		})
		if err != nil {
			return hs, mgsErr(err, "read host flash slot hash")
		}
		return hs, nil
	}
	hs, err := get()
	if err != nil || hs.Status == mgs.HashHashed {
		return hs.SHA256, err
	}
	if hs.Status == mgs.HashNotCalculated {
		if err := set.Do(ctx, func(ctx context.Context, c *mgs.Client) error {
			return c.HashStart(ctx, sp, mgs.ComponentHostBootFlash, slot)
		}); err != nil {
			return "", mgsErr(err, "start host flash slot hash")
		}
	}
	deadline := time.Now().Add(hashTimeout)
	for {
		activity.RecordHeartbeat(ctx, "hashing")
		if err := activities.SleepCtx(ctx, hashPollInterval); err != nil {
			return "", err
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("host flash slot %d: hashing did not finish within %s", slot, hashTimeout)
		}
		hs, err := get()
		if err != nil {
			return "", err
		}
		switch hs.Status {
		case mgs.HashHashed:
			return hs.SHA256, nil
		case mgs.HashNotCalculated:
			return "", fmt.Errorf("host flash slot %d: its contents changed while it was hashed", slot)
		}
	}
}

// Hashing a host boot flash slot, as MGS's client and Nexus do it.
const (
	// hashPollInterval is gateway-client's SLEEP_BETWEEN_POLLS: polling
	// the SP at 1 Hz is cheap, and hashing takes a few seconds.
	hashPollInterval = time.Second
	// hashTimeout is Nexus's PHASE_1_HASHING_TIMEOUT: hashing takes a few
	// seconds; a minute means something is very wrong (a stuck hashing
	// engine was the one case seen).
	hashTimeout = time.Minute
)
