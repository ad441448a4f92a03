package zoneexpunge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/nexusdb"
	"github.com/fleetsaga/fleetsaga/fleet/nexuslockstep"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// Owner mode: the expunge goes through Nexus's target blueprint (docs/CONFORMANCE.md §I).

// blueprintCreator names fleetsaga as the creator of the blueprints it imports.
const blueprintCreator = "fleetsaga"

// maxTargetRebases bounds how often one ExpungeThroughBlueprint makes a new
// child because the target moved between reading it and setting the child
// (Nexus's planner makes a target every time it has something to change).
const maxTargetRebases = 10

// lockstepErr is the one place that turns a lockstep client error into an
// activity error: retryable ones stay plain, others become typed.
func lockstepErr(err error) error {
	if err == nil || nexuslockstep.IsRetryable(err) {
		return err
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), failure.NexusLockstepRejected, err)
}

// ownerView is what the lockstep API says about a sled's config owner.
type ownerView struct {
	client *nexuslockstep.Client
	target nexuslockstep.Target
	bp     *nexuslockstep.Blueprint
	mode   string
	reason string
}

// owner reads who owns the sled's config: the rack's Nexus, through its
// enabled target blueprint (ModeOwner), or fleetsaga itself when direct mode
// says the racks have no Nexus (ModeDirect). Anything else fails closed: no
// endpoint, an endpoint that is not the lockstep API, a sled the target
// does not have active (OwnerUnknown), a disabled target (TargetDisabled,
// an operator's pause). A transport error is retried.
func (a *ZoneActivities) owner(ctx context.Context, sled uuid.UUID) (ownerView, error) {
	v := ownerView{mode: ModeDirect}
	if a.Fleet.DirectMode {
		v.reason = "direct mode is configured (the racks have no Nexus): fleetsaga writes the sled's config"
		return v, nil
	}
	if a.Fleet.NexusLockstep == "" {
		return v, zoneFail(failure.OwnerUnknown, "sled %s: %s", sled, fleet.NoOwnerConfigured)
	}
	rack := ""
	if strings.Contains(a.Fleet.NexusLockstep, "{rack}") {
		if a.Nexus == nil {
			return v, zoneFail(failure.NexusDBNotConfigured, "the Nexus lockstep endpoint names {rack}: the sled table (fleet endpoint nexusDB) is needed to find sled %s's rack", sled)
		}
		s, err := a.Nexus.Sled(ctx, sled)
		if errors.Is(err, nexusdb.ErrNoSuchSled) {
			return v, zoneFail(failure.SledNotFound, "sled %s is not in Nexus's sled table", sled)
		}
		if err != nil {
			return v, err
		}
		rack = s.RackID.String()
	}
	url := a.Fleet.NexusLockstepURL(rack)
	v.client = nexuslockstep.New(url, a.HTTP)
	t, bp, err := v.client.Current(ctx)
	if nexuslockstep.IsNotLockstepAPI(err) {
		return v, zoneFail(failure.OwnerUnknown, "sled %s: %s", sled, nexuslockstep.NotLockstepAPI(url))
	}
	if err != nil {
		return v, lockstepErr(err)
	}
	v.target, v.bp = t, bp
	if !t.Enabled {
		return v, zoneFail(failure.TargetDisabled, "sled %s: %s", sled, nexuslockstep.Disabled(t))
	}
	if sc, ok := bp.Sleds[sled]; !ok || sc.State != "active" {
		return v, zoneFail(failure.OwnerUnknown, "target blueprint %s does not have sled %s active: Nexus does not manage its config, and fleetsaga does not write it behind Nexus",
			t.TargetID, sled)
	}
	v.mode = ModeOwner
	v.reason = fmt.Sprintf("enabled target blueprint %s owns sled %s's config (Nexus's executor writes it): the expunge goes through a child blueprint, Nexus moves the sagas", t.TargetID, sled)
	return v, nil
}

// requireDirectMode refuses a direct write (a sled config PUT, a saga
// move in Nexus's database) unless this worker is in direct mode now. The
// precheck's mode is in the workflow's history: a run that chose direct
// mode under an older build or configuration replays that choice, and its
// write would land behind the rack's Nexus.
func (a *ZoneActivities) requireDirectMode(what string) error {
	if a.Fleet.DirectMode {
		return nil
	}
	return zoneFail(failure.OwnerUnknown, "refusing to %s directly: this worker is not in direct mode, so the rack's Nexus may own it "+
		"(run the expunge again to go through the target blueprint); %s", what, fleet.NoOwnerConfigured)
}

// ownerPrecheck adds the owner's view to a precheck: the mode, and in owner
// mode the blueprint's generation and the zone's nexus_generation.
func (a *ZoneActivities) ownerPrecheck(ctx context.Context, in ZonePrecheckInput, out *ZonePrecheck) error {
	v, err := a.owner(ctx, in.Sled)
	if err != nil {
		return err
	}
	out.Mode, out.ModeReason = v.mode, v.reason
	if v.mode != ModeOwner {
		return nil
	}
	out.TargetID = v.target.TargetID
	sc := v.bp.Sleds[in.Sled]
	out.BlueprintGeneration = sc.SledAgentGeneration
	out.LedgeredGeneration = max(out.LedgeredGeneration, sc.SledAgentGeneration)
	out.NexusGeneration, _ = v.bp.NexusGenerationOf(in.Zone)
	z, ok := sc.Zones[in.Zone]
	switch {
	case !ok && out.Existing == nil:
		return zoneFail(failure.ZoneNotFound, "target blueprint %s has no zone %s on sled %s", v.target.TargetID, in.Zone, in.Sled)
	case ok && z.Disposition.Kind == nexuslockstep.Expunged && out.Existing == nil:
		return zoneFail(failure.ExpungeConflict,
			"target blueprint %s already has zone %s expunged (as of generation %d), not by fleetsaga: Nexus owns that expunge",
			v.target.TargetID, in.Zone, z.Disposition.AsOfGeneration)
	}
	return nil
}

// ZoneBlueprintInput is owner mode's step 3.
type ZoneBlueprintInput struct {
	AttemptID    uuid.UUID `json:"attemptId"`
	Sled         uuid.UUID `json:"sled"`
	Zone         uuid.UUID `json:"zone"`
	ExpungedAsOf uint64    `json:"expungedAsOf"`
}

// ZoneBlueprintResult is the target that expunges the zone.
type ZoneBlueprintResult struct {
	TargetID uuid.UUID `json:"targetId"`
	// Rebases: new children made because the target moved under one.
	Rebases int `json:"rebases,omitempty"`
	// Sagas are the expunged Nexus's unfinished sagas just before its
	// expunge became the target (Nexus zones).
	Sagas []uuid.UUID `json:"sagas,omitempty"`
}

// ExpungeThroughBlueprint is owner mode's step 3: a child of the current
// target with the sled at ExpungedAsOf and the zone expunged (not yet ready
// for cleanup) is imported and made the target, enabled. A target that
// moved on in between gets a new child (bounded); a target whose sled is
// already at ExpungedAsOf or past it with the zone in service is a
// StaleGeneration (the workflow rebases the ledger); a target already
// expunging the zone as of ExpungedAsOf (a retry) is the result. The
// target is never overwritten: Nexus takes only a child of the current one.
func (a *ZoneActivities) ExpungeThroughBlueprint(ctx context.Context, in ZoneBlueprintInput) (ZoneBlueprintResult, error) {
	var out ZoneBlueprintResult
	for {
		activity.RecordHeartbeat(ctx, out.Rebases)
		v, err := a.owner(ctx, in.Sled)
		if err != nil {
			return out, err
		}
		if v.mode != ModeOwner {
			return out, zoneFail(failure.OwnerUnknown, "the owner changed during the expunge (%s); fleetsaga does not write behind Nexus", v.reason)
		}
		sc := v.bp.Sleds[in.Sled]
		z, ok := sc.Zones[in.Zone]
		if !ok {
			return out, zoneFail(failure.ZoneNotFound, "target blueprint %s has no zone %s on sled %s", v.target.TargetID, in.Zone, in.Sled)
		}
		if z.Disposition.Kind == nexuslockstep.Expunged {
			if z.Disposition.AsOfGeneration != in.ExpungedAsOf {
				return out, zoneFail(failure.ExpungeConflict, "target blueprint %s has zone %s expunged as of generation %d, the ledger as of %d",
					v.target.TargetID, in.Zone, z.Disposition.AsOfGeneration, in.ExpungedAsOf)
			}
			out.TargetID = v.target.TargetID
			return out, a.event(ctx, in.AttemptID, "zone.blueprint", "", fmt.Sprintf(
				"target blueprint %s expunges zone %s as of sled generation %d", v.target.TargetID, in.Zone, in.ExpungedAsOf))
		}
		if sc.SledAgentGeneration >= in.ExpungedAsOf {
			return out, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"target blueprint %s has sled %s at generation %d with zone %s in service: rebase past it",
				v.target.TargetID, in.Sled, sc.SledAgentGeneration, in.Zone), failure.StaleGeneration, nil, sc.SledAgentGeneration)
		}
		if a.Nexus != nil && z.ZoneType.Type == nexuslockstep.ZoneNexus {
			if out.Sagas, err = a.Nexus.UnfinishedSagas(ctx, in.Zone); err != nil {
				return out, err
			}
		}
		// Named by the attempt and the parent: a retry after a lost answer
		// makes the same child, and finds it imported.
		id := uuid.NewSHA1(in.AttemptID, []byte(fmt.Sprintf("%s/%d", v.target.TargetID, in.ExpungedAsOf)))
		child, err := v.bp.ChildExpunging(id, in.Sled, in.Zone, in.ExpungedAsOf, blueprintCreator, fmt.Sprintf(
			"fleetsaga: expunge zone %s from sled %s as of generation %d (attempt %s)", in.Zone, in.Sled, in.ExpungedAsOf, in.AttemptID), time.Now())
		if err != nil {
			return out, zoneFail(failure.NexusLockstepRejected, "%v", err)
		}
		if err := v.client.Import(ctx, child); err != nil {
			if _, rerr := v.client.Blueprint(ctx, id); rerr != nil {
				return out, lockstepErr(err) // not imported earlier either
			}
		}
		_, err = v.client.SetTarget(ctx, id, true)
		if nexuslockstep.IsTargetMoved(err) {
			if out.Rebases >= maxTargetRebases {
				return out, zoneFail(failure.TargetMovedTooOften,
					"the target blueprint moved %d times while making zone %s's expunge the target; giving up (resumable)", out.Rebases, in.Zone)
			}
			out.Rebases++
			activity.GetLogger(ctx).Info("target blueprint moved; rebasing the expunge onto the new target", "zone", in.Zone, "rebases", out.Rebases)
			continue
		}
		if err != nil {
			return out, lockstepErr(err)
		}
		out.TargetID = id
		return out, a.event(ctx, in.AttemptID, "zone.blueprint", "", fmt.Sprintf(
			"blueprint %s (child of %s) expunging zone %s as of sled generation %d made the target; %d rebases",
			id, v.target.TargetID, in.Zone, in.ExpungedAsOf, out.Rebases))
	}
}

// ZoneOwnerCleanupInput is owner mode's step 5.
type ZoneOwnerCleanupInput struct {
	AttemptID    uuid.UUID     `json:"attemptId"`
	Sled         uuid.UUID     `json:"sled"`
	Zone         uuid.UUID     `json:"zone"`
	Nexus        bool          `json:"nexus"`
	ExpungedAsOf uint64        `json:"expungedAsOf"`
	Sagas        []uuid.UUID   `json:"sagas,omitempty"`
	Deadline     time.Time     `json:"deadline"`
	PollInterval time.Duration `json:"pollInterval"`
}

// ZoneOwnerCleanupResult is what Nexus did, proven.
type ZoneOwnerCleanupResult struct {
	TargetID   uuid.UUID   `json:"targetId"`
	SagasMoved []uuid.UUID `json:"sagasMoved,omitempty"`
	NewOwner   uuid.UUID   `json:"newOwner,omitzero"`
}

// AwaitOwnerCleanup is owner mode's step 5, after the inventory proof: the
// target blueprint has the zone expunged and ready for cleanup (Nexus's
// planner, from inventory), and for a Nexus zone no unfinished saga is left
// on it and every saga it held that moved is owned by a Nexus of its
// nexus_generation (Nexus's executor). It then records the moved sagas in
// the ledger (the commit counts them). The zone back in service in a later
// target is ZoneReinstated; a saga on a Nexus of another generation is
// SagaWrongGeneration.
func (a *ZoneActivities) AwaitOwnerCleanup(ctx context.Context, in ZoneOwnerCleanupInput) (ZoneOwnerCleanupResult, error) {
	var out ZoneOwnerCleanupResult
	every := max(in.PollInterval, 10*time.Millisecond)
	// known are the expunged Nexus's sagas seen so far: those it held before
	// its expunge became the target, and those still on it at each look
	// (it claimed more until it was removed). Kept in the heartbeat, so a
	// retry on another worker knows them too.
	var hb ownerCleanupHeartbeat
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &hb)
	}
	hb.Known = union(hb.Known, in.Sagas)
	for {
		activity.RecordHeartbeat(ctx, hb)
		done, why, err := a.ownerCleanedUp(ctx, in, &hb, &out)
		if err != nil {
			var app *temporal.ApplicationError
			if errors.As(err, &app) && app.NonRetryable() {
				return out, err
			}
			why = err.Error()
		}
		if done {
			return out, nil
		}
		hb.Last = why
		if time.Now().After(in.Deadline) {
			return out, zoneFail(failure.OwnerCleanupTimedOut,
				"Nexus did not finish zone %s's expunge by %s (last: %s); the expunge is in the target blueprint, running it again resumes the proof",
				in.Zone, in.Deadline.Format(time.RFC3339), hb.Last)
		}
		if err := activities.SleepCtx(ctx, every); err != nil {
			return out, err
		}
	}
}

// ownerCleanupHeartbeat is AwaitOwnerCleanup's heartbeat.
type ownerCleanupHeartbeat struct {
	Known []uuid.UUID `json:"known,omitempty"`
	Last  string      `json:"last,omitempty"`
}

// union adds the IDs of b missing from a.
func union(a, b []uuid.UUID) []uuid.UUID {
	for _, id := range b {
		if !slices.Contains(a, id) {
			a = append(a, id)
		}
	}
	return a
}

// ownerCleanedUp is one look at the saga table and the target.
func (a *ZoneActivities) ownerCleanedUp(ctx context.Context, in ZoneOwnerCleanupInput, hb *ownerCleanupHeartbeat, out *ZoneOwnerCleanupResult) (bool, string, error) {
	if in.Nexus && a.Nexus != nil {
		still, err := a.Nexus.UnfinishedSagas(ctx, in.Zone)
		if err != nil {
			return false, "", err
		}
		hb.Known = union(hb.Known, still)
	}
	v, err := a.owner(ctx, in.Sled)
	if err != nil {
		return false, "", err
	}
	if v.bp == nil {
		return false, "", zoneFail(failure.OwnerUnknown, "the owner went away during the expunge: %s", v.reason)
	}
	z, ok := v.bp.Zone(in.Sled, in.Zone)
	if ok && z.Disposition.Kind != nexuslockstep.Expunged {
		return false, "", zoneFail(failure.ZoneReinstated, "target blueprint %s has zone %s in service again", v.target.TargetID, in.Zone)
	}
	if ok && !z.Disposition.ReadyForCleanup {
		return false, fmt.Sprintf("target blueprint %s: zone %s expunged, not yet ready for cleanup", v.target.TargetID, in.Zone), nil
	}
	out.TargetID = v.target.TargetID
	if !in.Nexus {
		return true, "", a.event(ctx, in.AttemptID, "zone.owner.ready_for_cleanup", "", fmt.Sprintf(
			"target blueprint %s has zone %s ready for cleanup", v.target.TargetID, in.Zone))
	}
	if a.Nexus == nil {
		return false, "", zoneFail(failure.NexusDBNotConfigured, "no Nexus database configured (fleet endpoint nexusDB) to prove the sagas moved")
	}
	left, err := a.Nexus.CountUnfinished(ctx, in.Zone)
	if err != nil {
		return false, "", err
	}
	if left > 0 {
		return false, fmt.Sprintf("%d unfinished sagas still on expunged Nexus %s (Nexus reassigns them)", left, in.Zone), nil
	}
	gen, _ := v.bp.NexusGenerationOf(in.Zone)
	owners, err := a.Nexus.SagaOwners(ctx, hb.Known)
	if err != nil {
		return false, "", err
	}
	count := map[uuid.UUID]int{}
	out.SagasMoved = out.SagasMoved[:0]
	for _, id := range hb.Known {
		o, ok := owners[id]
		if !ok || o.Sec == uuid.Nil || o.Sec == in.Zone {
			continue
		}
		if g, ok := v.bp.NexusGenerationOf(o.Sec); !ok || g != gen {
			return false, "", zoneFail(failure.SagaWrongGeneration,
				"saga %s of expunged Nexus %s (nexus_generation %d) is owned by %s, which is not a Nexus of that generation in target blueprint %s",
				id, in.Zone, gen, o.Sec, v.target.TargetID)
		}
		out.SagasMoved = append(out.SagasMoved, id)
		count[o.Sec]++
	}
	// The new owner recorded is the one that took most of them (Nexus
	// moves all of a zone's sagas to one Nexus per pass).
	for sec, n := range count {
		if out.NewOwner == uuid.Nil || n > count[out.NewOwner] || (n == count[out.NewOwner] && strings.Compare(sec.String(), out.NewOwner.String()) < 0) {
			out.NewOwner = sec
		}
	}
	slices.SortFunc(out.SagasMoved, func(x, y uuid.UUID) int { return strings.Compare(x.String(), y.String()) })
	if len(out.SagasMoved) > 0 {
		if err := a.Store.RecordSagaReassignment(ctx, ledger.SagaReassignment{
			ZoneID: in.Zone, AttemptID: in.AttemptID, NewOwner: out.NewOwner, Sagas: out.SagasMoved,
		}); err != nil {
			return false, "", err
		}
	}
	return true, "", a.event(ctx, in.AttemptID, "zone.owner.sagas", "", fmt.Sprintf(
		"target blueprint %s has zone %s ready for cleanup; no unfinished saga left on it; Nexus moved %d of its %d sagas to Nexus of generation %d (%s)",
		v.target.TargetID, in.Zone, len(out.SagasMoved), len(hb.Known), gen, out.NewOwner))
}

// sameGenerationAs tells which Nexus zones can run the sagas of zone: those
// of its nexus_generation in the target blueprint. In direct mode (no
// blueprint), or with zones it does not list, generations are unknown and
// every Nexus counts (the rack has only one generation then).
func (a *ZoneActivities) sameGenerationAs(ctx context.Context, sled, zone uuid.UUID) (func(uuid.UUID) bool, error) {
	all := func(uuid.UUID) bool { return true }
	v, err := a.owner(ctx, sled)
	if err != nil || v.bp == nil {
		return all, err
	}
	gen, ok := v.bp.NexusGenerationOf(zone)
	if !ok {
		return all, nil
	}
	return func(other uuid.UUID) bool {
		g, ok := v.bp.NexusGenerationOf(other)
		return !ok || g == gen
	}, nil
}
