package spec

import (
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
)

// Rack is one Oxide-style rack: two MGS instances (one per scrimlet) that can
// each reach every SP, and its sleds.
type Rack struct {
	ID string `json:"id"`
	// MGSSleds names the cubby of the sled each MGS instance runs on
	// (index = MGS instance). That MGS refuses to reset its own sled's SP.
	MGSSleds []int  `json:"mgsSleds"`
	Sleds    []Sled `json:"sleds"`
	// SPPhase2Record is an opt-in mode (the seed's proposal, not today's
	// MGS): each SP keeps its own record of its host's phase 2 fetch and
	// every MGS answers host-phase2-progress from it, whichever MGS served
	// the fetch. Off (today's MGS): each MGS answers only with the requests
	// it served itself. See fleetsim/DEVIATIONS.md.
	SPPhase2Record bool `json:"spPhase2Record,omitempty"`
	// SledAgentMode is how the rack's sled-agents apply a config (see the
	// SledAgent* constants). Empty means SledAgentLedgerFirst, today's.
	SledAgentMode string `json:"sledAgentMode,omitempty"`
	// Owners are the rack's other writers fleetsim plays (docs/CONFORMANCE.md §I):
	// Nexus's target blueprint, blueprint executor and MGS update driver.
	// Every one is on unless the spec turns it off, as on a real rack
	// (fleetsim/DEVIATIONS.md).
	Owners RackOwners `json:"owners,omitempty"`
}

// RackOwners are the rack's owners of sled configs and SP updates
// (package fleetsim/nexus). Each is on when unset (nil) or true; false
// turns it off (an owner off is a deviation from today's rack).
type RackOwners struct {
	// Nexus serves the lockstep API subset (target blueprint view, set and
	// enable; blueprint view and import) under /nexus/{rack}/, seeded with an
	// enabled target blueprint made from the spec, as rack setup leaves it.
	// The sleds' zones are then configured as that blueprint says (a
	// filesystem pool, the install dataset image, host phase 2 "current
	// contents"), so the executor's first push changes nothing. Off: no
	// lockstep API (fleetsaga's zone expunge runs in direct mode), and the
	// executor and MGS driver are off too.
	Nexus *bool `json:"nexus,omitempty"`
	// Executor (needs Nexus): while the target is enabled, PUT every sled's
	// config from the target every Timings.BlueprintExecutorInterval; the
	// planner marks expunged zones ready for cleanup from inventory; sagas of
	// expunged, ready Nexus zones go to a running Nexus of the same
	// nexus_generation.
	Executor *bool `json:"executor,omitempty"`
	// MGSUpdates (needs Nexus): Nexus's MGS update driver carries out the
	// target's pending MGS updates of SP firmware.
	MGSUpdates *bool `json:"mgsUpdates,omitempty"`
}

// NexusOn says whether Nexus's lockstep API and target blueprint are played.
func (o RackOwners) NexusOn() bool { return on(o.Nexus) }

// ExecutorOn says whether the blueprint executor and planner run.
func (o RackOwners) ExecutorOn() bool { return o.NexusOn() && on(o.Executor) }

// MGSUpdatesOn says whether Nexus's MGS update driver runs.
func (o RackOwners) MGSUpdatesOn() bool { return o.NexusOn() && on(o.MGSUpdates) }

// NoOwners is a rack without Nexus's owners: fleetsaga alone writes its
// sleds' configs and SP updates (zone expunge in direct mode).
func NoOwners() RackOwners { return RackOwners{Nexus: Off(), Executor: Off(), MGSUpdates: Off()} }

// Off turns an owner off in a spec written in Go.
func Off() *bool { b := false; return &b }

// On turns an owner on explicitly (nil is on too).
func On() *bool { b := true; return &b }

func on(b *bool) bool { return b == nil || *b }

// Sled-agent modes (docs/CONFORMANCE.md §D and §H).
const (
	// SledAgentLedgerFirst is today's sled-agent (fleetsim's default): a
	// PUT /omicron-config that passes the generation checks is ledgered and
	// answered 204 at once; the reconciler then removes and starts zones in
	// the background, retries failed removals, and reports each zone's
	// result in GET /inventory's last_reconciliation.
	SledAgentLedgerFirst = "ledger-first"
	// SledAgentRemoveBeforeLedger is the seed's rule (opt-in): zone removal
	// must succeed before the new generation is ledgered; a failed removal
	// fails the PUT (500 ZoneRemovalFailed) and keeps the old ledger, and
	// the same PUT again retries the removal.
	SledAgentRemoveBeforeLedger = "remove-before-ledger"
)

// ZoneKinds are the zone types of the sled-agent API (OmicronZoneType's
// "type" tags in sled-agent-openapi-48.0.0.json).
var ZoneKinds = []string{
	"boundary_ntp", "clickhouse", "clickhouse_keeper", "clickhouse_server", "cockroach_db", "crucible",
	"crucible_pantry", "external_dns", "internal_dns", "internal_ntp", "nexus", "oximeter",
}

// Sled is one compute sled: its SP, its host boot flash and its zones.
type Sled struct {
	ID     uuid.UUID `json:"id"`
	Cubby  int       `json:"cubby"` // the SP slot in MGS paths: /sp/sled/{cubby}
	Serial string    `json:"serial"`
	Part   string    `json:"part"`
	// SP firmware: active and inactive slot versions (caboose VERS).
	SP SPFirmware `json:"sp"`
	// Host boot flash: versions of slot 0 and 1 and the active slot.
	Host HostFlash `json:"host"`
	// Zones running on the sled, at ledgered config generation Generation.
	Generation int64  `json:"generation"`
	Zones      []Zone `json:"zones"`
}

// SPFirmware is the SP's two firmware slots.
type SPFirmware struct {
	Active   string `json:"active"`
	Inactive string `json:"inactive"`
}

// HostFlash is the host boot flash: two slots, one active.
type HostFlash struct {
	Slots      [2]string `json:"slots"`
	ActiveSlot int       `json:"activeSlot"`
}

// Zone is one service zone on a sled (omicron's OmicronZoneConfig subset).
type Zone struct {
	ID   uuid.UUID `json:"id"`
	Kind string    `json:"kind"` // one of ZoneKinds, e.g. nexus, crucible, internal_dns, internal_ntp
}

// ZoneKindNexus is the zone kind whose sagas must be reassigned on expunge.
const ZoneKindNexus = "nexus"

func isTrue(b *bool) bool { return b != nil && *b }

func validateRacks(racks []Rack) error {
	var errs []error
	sleds := map[uuid.UUID]bool{}
	zones := map[uuid.UUID]bool{}
	for ri, r := range racks {
		if r.ID == "" {
			errs = append(errs, fmt.Errorf("racks[%d]: id is required", ri))
		}
		if len(r.MGSSleds) != 2 {
			errs = append(errs, fmt.Errorf("rack %q: mgsSleds must name exactly 2 cubbies, got %d", r.ID, len(r.MGSSleds)))
		}
		switch r.SledAgentMode {
		case "", SledAgentLedgerFirst, SledAgentRemoveBeforeLedger:
		default:
			errs = append(errs, fmt.Errorf("rack %q: sledAgentMode %q is not %q or %q", r.ID, r.SledAgentMode,
				SledAgentLedgerFirst, SledAgentRemoveBeforeLedger))
		}
		if (isTrue(r.Owners.Executor) || isTrue(r.Owners.MGSUpdates)) && !r.Owners.NexusOn() {
			errs = append(errs, fmt.Errorf("rack %q: owners.executor and owners.mgsUpdates need owners.nexus", r.ID))
		}
		cubbies := map[int]bool{}
		for si, s := range r.Sleds {
			where := fmt.Sprintf("rack %q sleds[%d]", r.ID, si)
			if s.ID == uuid.Nil {
				errs = append(errs, fmt.Errorf("%s: id is required", where))
			}
			if sleds[s.ID] {
				errs = append(errs, fmt.Errorf("%s: duplicate sled id %s", where, s.ID))
			}
			sleds[s.ID] = true
			if cubbies[s.Cubby] {
				errs = append(errs, fmt.Errorf("%s: duplicate cubby %d", where, s.Cubby))
			}
			cubbies[s.Cubby] = true
			if s.Serial == "" || s.SP.Active == "" {
				errs = append(errs, fmt.Errorf("%s: serial and sp.active are required", where))
			}
			if s.Host.ActiveSlot != 0 && s.Host.ActiveSlot != 1 {
				errs = append(errs, fmt.Errorf("%s: host.activeSlot must be 0 or 1", where))
			}
			if s.Generation < 0 || (s.Generation == 0 && len(s.Zones) > 0) {
				errs = append(errs, fmt.Errorf("%s: generation must be >= 1 when the sled has zones (got %d)", where, s.Generation))
			}
			for zi, z := range s.Zones {
				if z.ID == uuid.Nil || z.Kind == "" {
					errs = append(errs, fmt.Errorf("%s zones[%d]: id and kind are required", where, zi))
				} else if !slices.Contains(ZoneKinds, z.Kind) {
					errs = append(errs, fmt.Errorf("%s zones[%d]: kind %q is not a sled-agent zone type (%v)", where, zi, z.Kind, ZoneKinds))
				}
				if zones[z.ID] {
					errs = append(errs, fmt.Errorf("%s zones[%d]: duplicate zone id %s", where, zi, z.ID))
				}
				zones[z.ID] = true
			}
		}
		for _, c := range r.MGSSleds {
			if !cubbies[c] {
				errs = append(errs, fmt.Errorf("rack %q: mgsSleds names cubby %d, which has no sled", r.ID, c))
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}
