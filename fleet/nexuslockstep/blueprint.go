package nexuslockstep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// Disposition kinds of a blueprint zone (BlueprintZoneDisposition).
const (
	InService = "in_service"
	Expunged  = "expunged"
)

// ZoneNexus is a Nexus zone's zone_type.type.
const ZoneNexus = "nexus"

// externallyNetworked are the zone types with an external IP and a NIC
// (omicron nexus/types/src/deployment/zone_type.rs external_networking).
var externallyNetworked = map[string]bool{ZoneNexus: true, "external_dns": true, "boundary_ntp": true}

// Blueprint is a blueprint as Nexus sent it, with the fields fleetsaga
// reads typed. Its JSON is the raw document (with fleetsaga's edits).
type Blueprint struct {
	ID                uuid.UUID
	ParentBlueprintID *uuid.UUID
	NexusGeneration   uint64
	Sleds             map[uuid.UUID]Sled
	PendingMGSUpdates []PendingMGSUpdate
	raw               map[string]any
}

// Sled is the part of a BlueprintSledConfig fleetsaga reads.
type Sled struct {
	SledAgentGeneration uint64 `json:"sled_agent_generation"`
	State               string `json:"state"`
	Zones               Zones  `json:"zones"`
	// HostPhase2 is the desired phase 2 of each boot disk (slot_a, slot_b:
	// {type: current_contents} or {type: artifact, hash, version}).
	HostPhase2 map[string]struct {
		Type string `json:"type"`
		Hash string `json:"hash,omitempty"`
	} `json:"host_phase_2,omitempty"`
}

// Zones are a sled's zones by ID. On the wire they are an iddqd IdOrdMap
// (omicron nexus/types/src/deployment.rs BlueprintSledConfig.zones): a JSON
// array of zone configs, each keyed by its id, no id twice.
type Zones map[uuid.UUID]Zone

// UnmarshalJSON reads the array.
func (zs *Zones) UnmarshalJSON(raw []byte) error {
	var list []Zone
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("zones must be a JSON array (IdOrdMap): %w", err)
	}
	*zs = make(Zones, len(list))
	for _, z := range list {
		if _, dup := (*zs)[z.ID]; dup {
			return fmt.Errorf("zone %s listed twice", z.ID)
		}
		(*zs)[z.ID] = z
	}
	return nil
}

// Zone is the part of a BlueprintZoneConfig fleetsaga reads.
type Zone struct {
	ID          uuid.UUID   `json:"id"`
	Disposition Disposition `json:"disposition"`
	ZoneType    struct {
		Type            string  `json:"type"`
		NexusGeneration *uint64 `json:"nexus_generation,omitempty"`
	} `json:"zone_type"`
}

// Disposition is in_service, or expunged {as_of_generation, ready_for_cleanup}.
type Disposition struct {
	Kind            string `json:"kind"`
	AsOfGeneration  uint64 `json:"as_of_generation,omitempty"`
	ReadyForCleanup bool   `json:"ready_for_cleanup,omitempty"`
}

// PendingMGSUpdate is one device Nexus's MGS update driver is updating.
type PendingMGSUpdate struct {
	BaseboardID struct {
		PartNumber   string `json:"part_number"`
		SerialNumber string `json:"serial_number"`
	} `json:"baseboard_id"`
	SpType          string          `json:"sp_type"`
	SlotID          uint16          `json:"slot_id"`
	ArtifactVersion string          `json:"artifact_version"`
	Details         json.RawMessage `json:"details"`
}

// Component is the pending update's component (details.component: sp,
// rot, rot_bootloader, host_phase_1).
func (u PendingMGSUpdate) Component() string {
	var d struct {
		Component string `json:"component"`
	}
	_ = json.Unmarshal(u.Details, &d)
	return d.Component
}

// ParseBlueprint reads a blueprint, keeping every field.
func ParseBlueprint(raw []byte) (*Blueprint, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // generations are u64: no float rounding on the way back
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, errors.New("blueprint is not a JSON object")
	}
	var typed struct {
		ID                uuid.UUID          `json:"id"`
		ParentBlueprintID *uuid.UUID         `json:"parent_blueprint_id"`
		NexusGeneration   uint64             `json:"nexus_generation"`
		Sleds             map[uuid.UUID]Sled `json:"sleds"`
		PendingMGSUpdates struct {
			ByBaseboard []PendingMGSUpdate `json:"by_baseboard"`
		} `json:"pending_mgs_updates"`
	}
	if err := json.Unmarshal(raw, &typed); err != nil {
		return nil, fmt.Errorf("blueprint: %w", err)
	}
	if typed.ID == uuid.Nil {
		return nil, errors.New("blueprint without id")
	}
	return &Blueprint{ID: typed.ID, ParentBlueprintID: typed.ParentBlueprintID, NexusGeneration: typed.NexusGeneration,
		Sleds: typed.Sleds, PendingMGSUpdates: typed.PendingMGSUpdates.ByBaseboard, raw: m}, nil
}

// MarshalJSON is the blueprint as Nexus sent it, with fleetsaga's edits.
func (bp *Blueprint) MarshalJSON() ([]byte, error) { return json.Marshal(bp.raw) }

// Zone finds a zone of a sled.
func (bp *Blueprint) Zone(sled, zone uuid.UUID) (Zone, bool) {
	s, ok := bp.Sleds[sled]
	if !ok {
		return Zone{}, false
	}
	z, ok := s.Zones[zone]
	return z, ok
}

// NexusGenerationOf is a Nexus zone's nexus_generation anywhere in the
// blueprint (ok false: not a Nexus zone of this blueprint).
func (bp *Blueprint) NexusGenerationOf(zone uuid.UUID) (uint64, bool) {
	for _, s := range bp.Sleds {
		if z, ok := s.Zones[zone]; ok && z.ZoneType.Type == ZoneNexus && z.ZoneType.NexusGeneration != nil {
			return *z.ZoneType.NexusGeneration, true
		}
	}
	return 0, false
}

// ChildExpunging is a child of bp (ID id) that expunges zone from sled as of
// sled_agent_generation asOf: the sled's generation becomes asOf and the
// zone's disposition expunged, not yet ready for cleanup (Nexus's planner
// marks that from inventory). An in-service zone with external networking
// leaving service bumps external_networking_generation, as omicron's
// builder does (planning blueprint_builder/builder.rs,
// is_external_networking_config_different; blippy calls a child without
// the bump Fatal). Everything else is bp's.
func (bp *Blueprint) ChildExpunging(id, sled, zone uuid.UUID, asOf uint64, creator, comment string, now time.Time) (*Blueprint, error) {
	z, ok := bp.Zone(sled, zone)
	leavesNetwork := ok && z.Disposition.Kind == InService && externallyNetworked[z.ZoneType.Type]
	child, err := bp.child(id, sled, creator, comment, now, func(s map[string]any) error {
		z := zoneIn(s, zone)
		if z == nil {
			return fmt.Errorf("blueprint %s has no zone %s on sled %s", bp.ID, zone, sled)
		}
		gen := json.Number(fmt.Sprint(asOf))
		s["sled_agent_generation"] = gen
		z["disposition"] = map[string]any{"kind": Expunged, "as_of_generation": gen, "ready_for_cleanup": false}
		return nil
	})
	if err != nil || !leavesNetwork {
		return child, err
	}
	return child, child.bumpExternalNetworkingGeneration()
}

// bumpExternalNetworkingGeneration adds one to external_networking_generation.
func (bp *Blueprint) bumpExternalNetworkingGeneration() error {
	n, ok := bp.raw["external_networking_generation"].(json.Number)
	gen, err := strconv.ParseUint(n.String(), 10, 64)
	if !ok || err != nil {
		return fmt.Errorf("blueprint %s: external_networking_generation %v is not a generation", bp.ID, bp.raw["external_networking_generation"])
	}
	bp.raw["external_networking_generation"] = json.Number(strconv.FormatUint(gen+1, 10))
	return nil
}

// zoneIn is the raw config of a zone in a raw sled config, or nil.
func zoneIn(sled map[string]any, zone uuid.UUID) map[string]any {
	zones, _ := sled["zones"].([]any)
	for _, z := range zones {
		if z, ok := z.(map[string]any); ok && z["id"] == zone.String() {
			return z
		}
	}
	return nil
}

// child is a child of bp (ID id) with sled's config edited by edit; the
// rest is bp's.
func (bp *Blueprint) child(id, sled uuid.UUID, creator, comment string, now time.Time, edit func(sled map[string]any) error) (*Blueprint, error) {
	raw, err := bp.MarshalJSON()
	if err != nil {
		return nil, err
	}
	child, err := ParseBlueprint(raw)
	if err != nil {
		return nil, err
	}
	sleds, _ := child.raw["sleds"].(map[string]any)
	s, _ := sleds[sled.String()].(map[string]any)
	if s == nil {
		return nil, fmt.Errorf("blueprint %s has no sled %s", bp.ID, sled)
	}
	if err := edit(s); err != nil {
		return nil, err
	}
	child.raw["id"] = id.String()
	child.raw["parent_blueprint_id"] = bp.ID.String()
	child.raw["creator"] = creator
	child.raw["comment"] = comment
	child.raw["source"] = map[string]any{"source": "reconfigurator_cli_edit"}
	child.raw["time_created"] = now.UTC().Format(time.RFC3339Nano)
	out, _ := child.MarshalJSON()
	return ParseBlueprint(out)
}

// ChildWithHostPhase2 is a child of bp (ID id) whose sled config, at
// sled_agent_generation gen, names the phase 2 artifact hash (version) for
// boot disk slot ("A" or "B"): Nexus's executor sends it to the sled, and
// sled-agent writes that disk. Everything else is bp's.
func (bp *Blueprint) ChildWithHostPhase2(id, sled uuid.UUID, slot, hash, version string, gen uint64, creator, comment string, now time.Time) (*Blueprint, error) {
	return bp.child(id, sled, creator, comment, now, func(s map[string]any) error {
		hp2, _ := s["host_phase_2"].(map[string]any)
		if hp2 == nil {
			hp2 = map[string]any{"slot_a": map[string]any{"type": "current_contents"}, "slot_b": map[string]any{"type": "current_contents"}}
		}
		key := "slot_a"
		if slot == "B" {
			key = "slot_b"
		}
		hp2[key] = map[string]any{"type": "artifact", "hash": hash,
			"version": map[string]any{"artifact_version": "available", "version": version}}
		s["host_phase_2"] = hp2
		s["sled_agent_generation"] = json.Number(fmt.Sprint(gen))
		return nil
	})
}

// PendingUpdateFor is the target's pending MGS update of the device with
// this baseboard (part "" matches any part), or nil: while one names it,
// Nexus's MGS update driver owns the device.
func (bp *Blueprint) PendingUpdateFor(serial, part string) *PendingMGSUpdate {
	for i, u := range bp.PendingMGSUpdates {
		if u.BaseboardID.SerialNumber == serial && (part == "" || u.BaseboardID.PartNumber == part) {
			return &bp.PendingMGSUpdates[i]
		}
	}
	return nil
}
