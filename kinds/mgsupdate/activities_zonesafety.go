package mgsupdate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/nexuslockstep"
)

// ZoneSafetyInput asks whether a host's sled may reboot now.
type ZoneSafetyInput struct {
	Serial string    `json:"serial"`
	SledID uuid.UUID `json:"sledId,omitzero"`
	// Deadline bounds the wait for the sled's zones to become safe to
	// shut down (zero: check once, as a dry run does).
	Deadline     time.Time     `json:"deadline,omitzero"`
	PollInterval time.Duration `json:"pollInterval,omitempty"`
}

// guardedZoneKinds are the kinds zone_safety.rs checks; it assumes every
// other kind may go down whatever the rest of the rack is doing.
var guardedZoneKinds = []string{ZoneKindBoundaryNTP, ZoneKindCockroachDB, ZoneKindInternalDNS}

// HostZoneSafety is the read-only check before a host reboots: the
// planner's rule (SledUnsafeReasons, from omicron's host_phase_1.rs, which
// plans no host update of a sled with an unsafe zone) over the in-service
// zones of the rack's target blueprint, and what the target's planning
// report says of the sled (plannerUnsafeReasons). It polls until the sled is safe
// or the deadline passes, then refuses with ZoneUnsafeToShutdown naming
// each zone's kind and counts. Inventory's health of the zones (CockroachDB
// node status, NTP timesync, DNS generations) has no API among those
// fleetsaga speaks, so every in-service zone counts as healthy
// (docs/GAPS.md). In direct mode there is no blueprint to count the rack
// from: a sled holding a guarded zone is refused (ZoneSafetyUnknown).
func (a *MGSActivities) HostZoneSafety(ctx context.Context, in ZoneSafetyInput) error {
	s, err := a.sleds.find(ctx, in.Serial, in.SledID)
	if err != nil {
		return err
	}
	// The blueprint is read by sled ID: an ID the caller gave is first
	// checked to be the SP's sled (its sled-agent reports the SP's
	// baseboard). One found by serial in Nexus's sled table is; reading the
	// sled-agent then would refuse a plan while the host restarts.
	if s.idFromInput {
		if _, err := inventoryOf(ctx, s); err != nil {
			return err
		}
	}
	poll := in.PollInterval
	if poll <= 0 {
		poll = defaultPollInterval
	}
	for {
		unsafe, err := a.sledUnsafeReasons(ctx, s, in.Serial)
		if err != nil || len(unsafe) == 0 {
			return err
		}
		if in.Deadline.IsZero() || time.Now().After(in.Deadline) {
			return zoneUnsafeErr(s.id, unsafe, in.Deadline)
		}
		activity.RecordHeartbeat(ctx, unsafe[0].String())
		if err := activities.SleepCtx(ctx, poll); err != nil {
			return err
		}
	}
}

// sledUnsafeReasons reads the facts and applies the rule.
func (a *MGSActivities) sledUnsafeReasons(ctx context.Context, s hostSled, serial string) ([]ZoneUnsafe, error) {
	o, err := a.sleds.owner(ctx, s)
	if err != nil {
		return nil, err
	}
	if o == nil {
		return nil, a.directZoneSafety(ctx, s)
	}
	unsafe := SledUnsafeReasons(ZoneFacts{InService: inServiceZones(o.bp)}, s.id)
	return append(unsafe, plannerUnsafeReasons(o.bp, s.id, serial, unsafe)...), nil
}

// plannerUnsafeReasons is what the target's planning report, when it has
// one, says of the sled: its zones the planner held unsafe to shut down
// (zone_updates.unsafe_zones), and an SP or host update of its baseboard
// it blocked for them (unsafe_zone_found). The planner read the zones'
// health from inventory, which fleetsaga cannot (docs/GAPS.md). Zones
// already in have are left out.
func plannerUnsafeReasons(bp *nexuslockstep.Blueprint, sled uuid.UUID, serial string, have []ZoneUnsafe) []ZoneUnsafe {
	rep, ok := bp.PlannerReport()
	if !ok {
		return nil
	}
	var out []ZoneUnsafe
	for id, z := range bp.Sleds[sled].Zones {
		r, unsafe := rep.UnsafeZones[id]
		if !unsafe || z.Disposition.Kind != nexuslockstep.InService ||
			slices.ContainsFunc(have, func(u ZoneUnsafe) bool { return u.Zone == id }) {
			continue
		}
		out = append(out, ZoneUnsafe{Sled: sled, Zone: id, Kind: z.ZoneType.Type,
			Reason: "the planner's report of target blueprint " + bp.ID.String() + ": " + r.String()})
	}
	slices.SortFunc(out, func(a, b ZoneUnsafe) int { return strings.Compare(a.Zone.String(), b.Zone.String()) })
	for _, b := range rep.BlockedMGSUpdates {
		if why := b.UnsafeZoneFound(); why != "" && b.BaseboardID.SerialNumber == serial && len(have)+len(out) == 0 {
			out = append(out, ZoneUnsafe{Sled: sled, Kind: "planner",
				Reason: "the planner's report of target blueprint " + bp.ID.String() + " blocked the " + b.Reason.Type + " update: sled contains zones that are unsafe to shut down: " + why})
		}
	}
	return out
}

// inServiceZones is the blueprint's current_in_service_zones.
func inServiceZones(bp *nexuslockstep.Blueprint) []SledZone {
	var out []SledZone
	for sled, sc := range bp.Sleds {
		for id, z := range sc.Zones {
			if z.Disposition.Kind == nexuslockstep.InService {
				out = append(out, SledZone{Sled: sled, Zone: id, Kind: z.ZoneType.Type})
			}
		}
	}
	return out
}

// directZoneSafety: without Nexus the rack's zones are only each sled's
// own; a sled with none of the guarded kinds may reboot, any other is
// refused, since the rest of the rack cannot be counted.
func (a *MGSActivities) directZoneSafety(ctx context.Context, s hostSled) error {
	inv, err := inventoryOf(ctx, s)
	if err != nil {
		return err
	}
	if inv.LedgeredSledConfig == nil {
		return nil
	}
	var held []string
	for id, z := range inv.LedgeredSledConfig.Zones {
		if slices.Contains(guardedZoneKinds, z.ZoneType.Type) {
			held = append(held, z.ZoneType.Type+" zone "+id.String())
		}
	}
	if len(held) == 0 {
		return nil
	}
	slices.Sort(held)
	return mgsFatal(failure.ZoneSafetyUnknown, "sled %s holds %s: direct mode has no target blueprint to count the rack's zones of that kind from, "+
		"so whether rebooting it leaves enough of them (omicron's zone safety checks) is unknown; refusing to reboot it", s.id, strings.Join(held, ", "))
}

// zoneUnsafeErr names every unsafe zone with its kind and counts.
func zoneUnsafeErr(sled uuid.UUID, unsafe []ZoneUnsafe, deadline time.Time) error {
	why := make([]string, len(unsafe))
	for i, u := range unsafe {
		why[i] = u.String()
	}
	waited := ""
	if !deadline.IsZero() {
		waited = " (still so at " + deadline.UTC().Format(time.RFC3339) + ")"
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"sled %s contains zones that are unsafe to shut down%s: %s; refusing to reboot its host",
		sled, waited, strings.Join(why, "; ")), failure.ZoneUnsafeToShutdown, nil, unsafe)
}
