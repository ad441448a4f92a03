package nexus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
)

// Blueprint is Nexus's Blueprint (nexus-lockstep-0.0.1.json) with the
// fields fleetsim acts on typed; the others are kept as sent.
type Blueprint struct {
	ID                                  uuid.UUID                 `json:"id"`
	ParentBlueprintID                   *uuid.UUID                `json:"parent_blueprint_id"`
	NexusGeneration                     uint64                    `json:"nexus_generation"`
	Sleds                               map[uuid.UUID]*SledConfig `json:"sleds"`
	PendingMGSUpdates                   PendingMGSUpdates         `json:"pending_mgs_updates"`
	ClickhouseClusterConfig             json.RawMessage           `json:"clickhouse_cluster_config"`
	CockroachdbFingerprint              string                    `json:"cockroachdb_fingerprint"`
	CockroachdbSettingPreserveDowngrade json.RawMessage           `json:"cockroachdb_setting_preserve_downgrade"`
	Comment                             string                    `json:"comment"`
	Creator                             string                    `json:"creator"`
	ExternalDNSVersion                  uint64                    `json:"external_dns_version"`
	ExternalNetworkingGeneration        uint64                    `json:"external_networking_generation"`
	InternalDNSVersion                  uint64                    `json:"internal_dns_version"`
	OximeterReadMode                    json.RawMessage           `json:"oximeter_read_mode"`
	OximeterReadVersion                 uint64                    `json:"oximeter_read_version"`
	Source                              json.RawMessage           `json:"source"`
	TargetReleaseMinimumGeneration      uint64                    `json:"target_release_minimum_generation"`
	TimeCreated                         time.Time                 `json:"time_created"`
}

// requiredBlueprintFields are Blueprint's required properties.
var requiredBlueprintFields = []string{
	"cockroachdb_fingerprint", "cockroachdb_setting_preserve_downgrade", "comment", "creator",
	"external_dns_version", "external_networking_generation", "id", "internal_dns_version", "nexus_generation", "oximeter_read_mode",
	"oximeter_read_version", "pending_mgs_updates", "sleds", "source", "target_release_minimum_generation",
	"time_created",
}

// SledConfig is BlueprintSledConfig (omicron nexus/types/src/deployment.rs).
type SledConfig struct {
	Datasets                    json.RawMessage `json:"datasets"`
	Disks                       json.RawMessage `json:"disks"`
	HostPhase2                  json.RawMessage `json:"host_phase_2"`
	LastAllocatedIPSubnetOffset uint16          `json:"last_allocated_ip_subnet_offset"`
	Measurements                json.RawMessage `json:"measurements"`
	RemoveMupdateOverride       *uuid.UUID      `json:"remove_mupdate_override"`
	SledAgentGeneration         uint64          `json:"sled_agent_generation"`
	State                       string          `json:"state"`
	Subnet                      json.RawMessage `json:"subnet"`
	UpdateDisposition           json.RawMessage `json:"update_disposition"`
	Zones                       ZoneMap         `json:"zones"`
}

// requiredSledFields are BlueprintSledConfig's required properties.
var requiredSledFields = []string{
	"datasets", "disks", "host_phase_2", "last_allocated_ip_subnet_offset", "measurements",
	"sled_agent_generation", "state", "subnet", "update_disposition", "zones",
}

// ZoneMap is a sled's zones by ID; on the wire an iddqd IdOrdMap: a JSON
// array in ID order, no ID twice (omicron BlueprintSledConfig.zones).
type ZoneMap map[uuid.UUID]*ZoneConfig

// MarshalJSON writes the array in ID order.
func (zs ZoneMap) MarshalJSON() ([]byte, error) {
	list := make([]*ZoneConfig, 0, len(zs))
	for _, z := range zs {
		list = append(list, z)
	}
	slices.SortFunc(list, func(a, b *ZoneConfig) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	return json.Marshal(list)
}

// UnmarshalJSON reads the array; an ID twice is refused, as iddqd does.
func (zs *ZoneMap) UnmarshalJSON(raw []byte) error {
	var list []*ZoneConfig
	if err := json.Unmarshal(raw, &list); err != nil {
		return err
	}
	*zs = make(ZoneMap, len(list))
	for _, z := range list {
		if z == nil {
			return errors.New("zones: null zone config")
		}
		if _, dup := (*zs)[z.ID]; dup {
			return fmt.Errorf("zones: duplicate item with id %s", z.ID)
		}
		(*zs)[z.ID] = z
	}
	return nil
}

// ZoneConfig is BlueprintZoneConfig; ZoneType is a BlueprintZoneType.
type ZoneConfig struct {
	Disposition    Disposition     `json:"disposition"`
	FilesystemPool string          `json:"filesystem_pool"`
	ID             uuid.UUID       `json:"id"`
	ImageSource    json.RawMessage `json:"image_source"`
	ZoneType       json.RawMessage `json:"zone_type"`
}

// Disposition is BlueprintZoneDisposition: in_service, or expunged
// {as_of_generation, ready_for_cleanup}.
type Disposition struct {
	Kind            string  `json:"kind"`
	AsOfGeneration  *uint64 `json:"as_of_generation,omitempty"`
	ReadyForCleanup *bool   `json:"ready_for_cleanup,omitempty"`
}

// Disposition kinds.
const (
	InService = "in_service"
	Expunged  = "expunged"
)

// Expunged reports whether the zone is expunged, and whether it is ready for cleanup.
func (z *ZoneConfig) Expunged() (expunged, ready bool) {
	if z.Disposition.Kind != Expunged {
		return false, false
	}
	return true, z.Disposition.ReadyForCleanup != nil && *z.Disposition.ReadyForCleanup
}

// PendingMGSUpdates is the blueprint's list of MGS-driven updates.
type PendingMGSUpdates struct {
	ByBaseboard []PendingMGSUpdate `json:"by_baseboard"`
}

// PendingMGSUpdate is one device Nexus's MGS update driver is updating.
type PendingMGSUpdate struct {
	ArtifactHash    string                `json:"artifact_hash"`
	ArtifactVersion string                `json:"artifact_version"`
	BaseboardID     sledagent.BaseboardID `json:"baseboard_id"`
	Details         json.RawMessage       `json:"details"`
	SlotID          uint16                `json:"slot_id"`
	SpType          string                `json:"sp_type"`
}

// spDetails is PendingMgsUpdateDetails for component "sp".
type spDetails struct {
	Component               string          `json:"component"`
	ExpectedActiveVersion   string          `json:"expected_active_version"`
	ExpectedInactiveVersion expectedVersion `json:"expected_inactive_version"`
}

// expectedVersion is ExpectedVersion: no_valid_version, or version {version}.
type expectedVersion struct {
	Kind    string `json:"kind"`
	Version string `json:"version,omitempty"`
}

func (e expectedVersion) matches(found string) bool {
	if e.Kind == "no_valid_version" {
		return found == ""
	}
	return found == e.Version
}

// decodeBlueprint decodes an imported blueprint: its required fields must be
// present (Nexus's serde would refuse the body otherwise).
func decodeBlueprint(raw []byte) (*Blueprint, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, errors.New("body must be a JSON object (Blueprint)")
	}
	for _, f := range requiredBlueprintFields {
		if _, ok := fields[f]; !ok {
			return nil, fmt.Errorf("missing field `%s`", f)
		}
	}
	var bp Blueprint
	if err := json.Unmarshal(raw, &bp); err != nil {
		return nil, err
	}
	var sleds map[string]map[string]json.RawMessage
	_ = json.Unmarshal(fields["sleds"], &sleds)
	for sid, s := range sleds {
		for _, f := range requiredSledFields {
			if _, ok := s[f]; !ok {
				return nil, fmt.Errorf("sled %s: missing field `%s`", sid, f)
			}
		}
	}
	for sid, s := range bp.Sleds {
		if s == nil {
			return nil, fmt.Errorf("sled %s: config is null", sid)
		}
		for zid, z := range s.Zones {
			switch z.Disposition.Kind {
			case InService:
			case Expunged:
				if z.Disposition.AsOfGeneration == nil || z.Disposition.ReadyForCleanup == nil {
					return nil, fmt.Errorf("zone %s: an expunged disposition needs as_of_generation and ready_for_cleanup", zid)
				}
			default:
				return nil, fmt.Errorf("zone %s: unknown disposition %q", zid, z.Disposition.Kind)
			}
		}
	}
	return &bp, nil
}

// clone deep-copies bp (through JSON: blueprints are small).
func (bp *Blueprint) clone() *Blueprint {
	raw, _ := json.Marshal(bp)
	var out Blueprint
	_ = json.Unmarshal(raw, &out)
	return &out
}

// child is a copy of bp made by the planner, with a new ID and bp as parent.
func (bp *Blueprint) child(comment string) *Blueprint {
	c := bp.clone()
	parent := bp.ID
	c.ID, c.ParentBlueprintID = uuid.New(), &parent
	c.Comment, c.Creator = comment, plannerCreator
	c.Source = json.RawMessage(`{"source":"planner_loaded_from_database"}`)
	c.TimeCreated = time.Now().UTC()
	return c
}

// sledAgentConfig is what the executor PUTs to a sled: the sled's
// in-service zones at sled_agent_generation (omicron
// BlueprintSledConfig::into_in_service_sled_config).
func (s *SledConfig) sledAgentConfig() (sledagent.OmicronSledConfig, error) {
	cfg := sledagent.OmicronSledConfig{
		Generation:            s.SledAgentGeneration,
		Zones:                 map[uuid.UUID]sledagent.OmicronZoneConfig{},
		HostPhase2:            sledAgentHostPhase2(s.HostPhase2),
		RemoveMupdateOverride: s.RemoveMupdateOverride,
	}
	for id, z := range s.Zones {
		if z.Disposition.Kind != InService {
			continue
		}
		zt, err := omicronZoneType(z.ZoneType)
		if err != nil {
			return cfg, fmt.Errorf("zone %s: %w", id, err)
		}
		pool := z.FilesystemPool
		cfg.Zones[id] = sledagent.OmicronZoneConfig{ID: id, FilesystemPool: &pool, ImageSource: sledAgentImageSource(z.ImageSource), ZoneType: zt}
	}
	return cfg.Normalized(), nil
}

// sledAgentImageSource drops the blueprint's debugging "version" of an
// artifact image source (OmicronZoneImageSource has only the hash).
func sledAgentImageSource(raw json.RawMessage) json.RawMessage {
	var f map[string]any
	if err := json.Unmarshal(raw, &f); err != nil {
		return raw
	}
	delete(f, "version")
	out, _ := json.Marshal(f)
	return out
}

// sledAgentHostPhase2 converts BlueprintHostPhase2DesiredSlots likewise.
func sledAgentHostPhase2(raw json.RawMessage) json.RawMessage {
	var slots map[string]map[string]any
	if err := json.Unmarshal(raw, &slots); err != nil {
		return raw
	}
	for _, s := range slots {
		delete(s, "version")
	}
	out, _ := json.Marshal(slots)
	return out
}

// omicronZoneType converts a BlueprintZoneType to the sled-agent's
// OmicronZoneType as omicron's From<BlueprintZoneType> does
// (nexus/types/src/deployment/zone_type.rs): a Nexus zone loses
// nexus_generation and its external IP becomes the bare address; a
// boundary NTP zone's external IP becomes its snat_cfg; an external DNS
// zone's dns_address its bare addr. Every other field is the same in both
// documents (the NIC's ip_config included).
func omicronZoneType(raw json.RawMessage) (sledagent.OmicronZoneType, error) {
	f, err := objectOf(raw)
	if err != nil {
		return sledagent.OmicronZoneType{}, err
	}
	kind, _ := f["type"].(string)
	switch kind {
	case sledagent.ZoneTypeNexus:
		delete(f, "nexus_generation")
		if ext, ok := f["external_ip"].(map[string]any); ok {
			f["external_ip"] = ext["ip"]
		}
	case "boundary_ntp":
		if ext, ok := f["external_ip"].(map[string]any); ok {
			delete(f, "external_ip")
			f["snat_cfg"] = ext["snat_cfg"]
		}
	case "external_dns":
		if dns, ok := f["dns_address"].(map[string]any); ok {
			f["dns_address"] = dns["addr"]
		}
	case "":
		return sledagent.OmicronZoneType{}, errors.New("zone_type has no type")
	}
	out, err := json.Marshal(f)
	return sledagent.OmicronZoneType{Type: kind, Raw: out}, err
}

// blueprintZoneType is the reverse, for the initial blueprint made from the
// sleds' ledgers: external IPs get IDs derived from the zone, a Nexus zone
// its nexus_generation (and the lockstep port, if the ledger lacks it).
func blueprintZoneType(zone uuid.UUID, zt sledagent.OmicronZoneType, nexusGeneration uint64) (json.RawMessage, error) {
	raw, err := json.Marshal(zt)
	if err != nil {
		return nil, err
	}
	f, err := objectOf(raw)
	if err != nil {
		return nil, err
	}
	ipID := v4(uuid.NewSHA1(zone, []byte("external-ip"))).String()
	switch zt.Type {
	case sledagent.ZoneTypeNexus:
		f["external_ip"] = map[string]any{"id": ipID, "ip": f["external_ip"]}
		if _, ok := f["lockstep_port"]; !ok {
			f["lockstep_port"] = lockstepPort
		}
		f["nexus_generation"] = nexusGeneration
	case "boundary_ntp":
		f["external_ip"] = map[string]any{"id": ipID, "snat_cfg": f["snat_cfg"]}
		delete(f, "snat_cfg")
	case "external_dns":
		f["dns_address"] = map[string]any{"id": ipID, "addr": f["dns_address"]}
	}
	return json.Marshal(f)
}

// nexusGenerationOf is a Nexus zone type's nexus_generation (ok false for
// other zone types).
func nexusGenerationOf(raw json.RawMessage) (uint64, bool) {
	var f struct {
		Type            string  `json:"type"`
		NexusGeneration *uint64 `json:"nexus_generation"`
	}
	if err := json.Unmarshal(raw, &f); err != nil || f.Type != sledagent.ZoneTypeNexus || f.NexusGeneration == nil {
		return 0, false
	}
	return *f.NexusGeneration, true
}

func objectOf(raw json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var f map[string]any
	if err := dec.Decode(&f); err != nil || f == nil {
		return nil, errors.New("zone_type must be a JSON object")
	}
	return f, nil
}

// v4 marks a derived UUID as version 4 (the document's typed UUIDs).
func v4(u uuid.UUID) uuid.UUID {
	u[6] = (u[6] & 0x0f) | 0x40
	u[8] = (u[8] & 0x3f) | 0x80
	return u
}
