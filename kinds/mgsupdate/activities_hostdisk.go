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
	"github.com/fleetsaga/fleetsaga/fleet/nexuslockstep"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
)

// The rack's host OS update (docs/CONFORMANCE.md §I; omicron
// nexus/mgs-updates/src/host_phase1_updater.rs): sled-agent writes the new
// phase 2 to the disk of the inactive slot, MGS writes phase 1 to that
// slot, the slot is made active and the SP reset (which restarts the
// host); the update is done when sled-agent reports the new boot disk.

// sledConfigRetries bounds the rebases of a sled config or artifact
// config write whose generation another writer moved meanwhile.
const sledConfigRetries = 5

// blueprintCreator names fleetsaga in the blueprints it makes.
const blueprintCreator = "fleetsaga"

// HostPhase2Input puts phase 2 on the disk phase 1 slot Slot boots from.
type HostPhase2Input struct {
	Serial    string    `json:"serial"`
	SledID    uuid.UUID `json:"sledId,omitzero"`
	AttemptID uuid.UUID `json:"attemptId"`
	// ActiveSlot is the active phase 1 slot the precheck read; the host
	// must have booted from its disk. Slot is the other one.
	ActiveSlot uint16      `json:"activeSlot"`
	Slot       uint16      `json:"slot"`
	Phase2     ArtifactRef `json:"phase2"`
	// Deadline bounds the wait for sled-agent's write.
	Deadline     time.Time     `json:"deadline"`
	PollInterval time.Duration `json:"pollInterval"`
}

// HostPhase2ToDisk makes the inactive slot's disk hold phase 2: the
// artifact into sled-agent's artifact store (its config listing it
// first), the sled config naming it for that disk (through the target
// blueprint when Nexus owns the config, else PUT by fleetsaga), then
// inventory's boot_partitions until the disk holds it. The owner is
// checked before anything is written. Every step checks
// first, so a retry redoes nothing. The host must run from the disk of
// the active slot (else a reboot is pending, or someone else changed it:
// MismatchedHostOsActiveSlot).
func (a *MGSActivities) HostPhase2ToDisk(ctx context.Context, in HostPhase2Input) error {
	s, err := a.sleds.find(ctx, in.Serial, in.SledID)
	if err != nil {
		return err
	}
	disk := sledagent.M2SlotOf(in.Slot)
	hash := strings.ToLower(in.Phase2.SHA256)
	inv, bp, err := bootPartitions(ctx, s)
	if err != nil {
		return err
	}
	if err := checkBootDisk(s, bp, in.ActiveSlot); err != nil {
		return err
	}
	if holds(bp, disk, hash) {
		a.event(ctx, in.AttemptID, "phase2-on-disk", "", fmt.Sprintf("disk %s of sled %s already holds phase 2 %s", disk, s.id, hash))
		return nil
	}
	// The owner first: with it unknown or its target disabled, nothing is
	// written (the artifact config's generation is Nexus's to move too:
	// nexus/src/app/background/tasks/tuf_artifact_replication.rs).
	// namePhase2 asks again, as the target may move meanwhile.
	if _, err := a.sleds.owner(ctx, s); err != nil {
		return err
	}
	if err := a.storeArtifact(ctx, s, in.Phase2, in.AttemptID); err != nil {
		return err
	}
	via, err := a.namePhase2(ctx, s, inv, disk, hash, in)
	if err != nil {
		return err
	}
	a.event(ctx, in.AttemptID, "phase2-config", "", fmt.Sprintf("phase 2 %s named for disk %s of sled %s (%s)", hash, disk, s.id, via))
	return a.awaitPhase2(ctx, s, disk, hash, in)
}

// checkBootDisk: the host runs from the disk of the active phase 1 slot.
func checkBootDisk(s hostSled, bp sledagent.BootPartitions, active uint16) error {
	booted, err := bp.BootDisk.Value()
	if err != nil {
		return fmt.Errorf("sled %s: boot disk unknown: %w", s.id, err) // sled-agent still finding it: retried
	}
	if booted != sledagent.M2SlotOf(active) {
		return mgsFatal(failure.HostBootDiskMismatch,
			"sled %s booted from disk %s but phase 1 slot %d (disk %s) is active: a reboot is pending (another update in flight?)",
			s.id, booted, active, sledagent.M2SlotOf(active))
	}
	return nil
}

// holds: disk holds the artifact hash.
func holds(bp sledagent.BootPartitions, disk, hash string) bool {
	d, err := bp.Slot(disk).Value()
	return err == nil && strings.EqualFold(d.ArtifactHash, hash)
}

// storeArtifact puts phase 2 into the sled's artifact store: the config
// lists it (a new generation adding it), then the bytes under that
// generation unless the store has them (uploadPhase2).
func (a *MGSActivities) storeArtifact(ctx context.Context, s hostSled, art ArtifactRef, attempt uuid.UUID) error {
	hash := strings.ToLower(art.SHA256)
	// One across the tries: a try after a conflict sends from the start
	// again, and the workflow keeps the furthest count it heard.
	pw := progressWriter{a: a, attempt: attempt}
	for try := 0; ; try++ {
		cfg, found, err := s.client.ArtifactConfig(ctx)
		if err != nil {
			return sledAgentErr(s.id, err, "read artifact config")
		}
		if !found || !cfg.Has(hash) {
			next := sledagent.ArtifactConfig{Generation: cfg.Generation + 1, Artifacts: append(append([]string{}, cfg.Artifacts...), hash)}
			err := s.client.PutArtifactConfig(ctx, next)
			if sledagent.IsConflict(err) && try < sledConfigRetries {
				continue // another writer moved the config on: read it again
			}
			if err != nil {
				return sledAgentErr(s.id, err, "add phase 2 to the artifact config")
			}
			cfg = next
		}
		list, err := s.client.ListArtifacts(ctx)
		if err != nil {
			return sledAgentErr(s.id, err, "list artifacts")
		}
		if list.List[hash] > 0 {
			return nil
		}
		err = a.uploadPhase2(ctx, s, art, cfg.Generation, &pw)
		if sledagent.IsConflict(err) && try < sledConfigRetries {
			continue
		}
		return sledAgentErr(s.id, err, "put phase 2 into the artifact store")
	}
}

// namePhase2 makes the sled config name hash for disk: through a child of
// the target blueprint when Nexus's executor owns the config (it PUTs it
// to the sled), else by PUT at the next generation.
func (a *MGSActivities) namePhase2(ctx context.Context, s hostSled, inv *sledagent.Inventory, disk, hash string, in HostPhase2Input) (string, error) {
	for try := 0; ; try++ {
		owner, err := a.sleds.owner(ctx, s)
		if err != nil {
			return "", err
		}
		if owner != nil {
			return a.namePhase2InBlueprint(ctx, owner, s, disk, hash, in)
		}
		if inv.LedgeredSledConfig == nil {
			return "", mgsFatal(failure.SledAgentRejected, "sled %s has no ledgered config to add phase 2 to", s.id)
		}
		want, err := inv.LedgeredSledConfig.DesiredHostPhase2()
		if err != nil {
			return "", mgsFatal(failure.SledAgentRejected, "sled %s: %v", s.id, err)
		}
		if c := want.Slot(disk); c.Type == sledagent.Phase2Artifact && strings.EqualFold(c.Hash, hash) {
			return fmt.Sprintf("ledgered at generation %d", inv.LedgeredGeneration()), nil
		}
		cfg, err := inv.LedgeredSledConfig.WithHostPhase2(inv.LedgeredGeneration()+1, disk, hash)
		if err != nil {
			return "", mgsFatal(failure.SledAgentRejected, "sled %s: %v", s.id, err)
		}
		err = s.client.PutOmicronConfig(ctx, cfg)
		if err == nil {
			return fmt.Sprintf("sled config generation %d", cfg.Generation), nil
		}
		if !sledagent.IsBadRequest(err) || try >= sledConfigRetries {
			return "", sledAgentErr(s.id, err, "put sled config")
		}
		// Refused: another writer moved the generation on, or the config
		// is wrong. A fresh read tells (a wrong config fails again).
		if inv, _, err = bootPartitions(ctx, s); err != nil {
			return "", err
		}
	}
}

// namePhase2InBlueprint makes a child of the target naming hash for the
// sled's disk (at the sled's next generation) the target, unless the
// target names it already.
func (a *MGSActivities) namePhase2InBlueprint(ctx context.Context, o *configOwner, s hostSled, disk, hash string, in HostPhase2Input) (string, error) {
	sc := o.bp.Sleds[s.id]
	if c, ok := sc.HostPhase2["slot_"+strings.ToLower(disk)]; ok && c.Type == sledagent.Phase2Artifact && strings.EqualFold(c.Hash, hash) {
		return fmt.Sprintf("target blueprint %s names it", o.target.TargetID), nil
	}
	// Named by the attempt and the parent: a retry makes the same child.
	id := uuid.NewSHA1(in.AttemptID, []byte(fmt.Sprintf("%s/phase2/%s/%s", o.target.TargetID, disk, hash)))
	child, err := o.bp.ChildWithHostPhase2(id, s.id, disk, hash, in.Phase2.Version, sc.SledAgentGeneration+1, blueprintCreator,
		fmt.Sprintf("fleetsaga: host phase 2 %s for disk %s of sled %s (attempt %s)", in.Phase2.Version, disk, s.id, in.AttemptID), time.Now())
	if err != nil {
		return "", mgsFatal(failure.NexusLockstepRejected, "%v", err)
	}
	if err := o.client.Import(ctx, child); err != nil {
		if _, rerr := o.client.Blueprint(ctx, id); rerr != nil {
			return "", lockstepErr(err)
		}
	}
	// A target that moved meanwhile fails this try; the retry reads the
	// new target and makes a child of it.
	if _, err := o.client.SetTarget(ctx, id, true); err != nil && !nexuslockstep.IsTargetMoved(err) {
		return "", lockstepErr(err)
	} else if err != nil {
		return "", fmt.Errorf("target blueprint moved while naming phase 2: %w", err)
	}
	return fmt.Sprintf("blueprint %s, child of %s, made the target; Nexus's executor sends it", id, o.target.TargetID), nil
}

// awaitPhase2 polls inventory until disk holds hash.
func (a *MGSActivities) awaitPhase2(ctx context.Context, s hostSled, disk, hash string, in HostPhase2Input) error {
	poll := in.PollInterval
	if poll <= 0 {
		poll = defaultPollInterval
	}
	last := ""
	for {
		_, bp, err := bootPartitions(ctx, s)
		switch {
		case err == nil && holds(bp, disk, hash):
			a.event(ctx, in.AttemptID, "phase2-on-disk", "", fmt.Sprintf("sled-agent wrote phase 2 %s to disk %s of sled %s", hash, disk, s.id))
			return nil
		case err == nil:
			if _, serr := bp.Slot(disk).Value(); serr != nil {
				last = serr.Error()
			} else {
				last = "holds another image"
			}
		case isFatal(err):
			return err
		default:
			last = err.Error()
		}
		if !in.Deadline.IsZero() && time.Now().After(in.Deadline) {
			return mgsFatal(failure.Phase2WriteTimeout, "sled %s did not write phase 2 %s to disk %s by %s (disk %s: %s)",
				s.id, hash, disk, in.Deadline.UTC().Format(time.RFC3339), disk, last)
		}
		activity.RecordHeartbeat(ctx, last)
		if err := activities.SleepCtx(ctx, poll); err != nil {
			return err
		}
	}
}
