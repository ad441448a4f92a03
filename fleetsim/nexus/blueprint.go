package nexus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	"external_dns_version", "id", "internal_dns_version", "nexus_generation", "oximeter_read_mode",
	"oximeter_read_version", "pending_mgs_updates", "sleds", "source", "target_release_minimum_generation",
	"time_created",
}

// SledConfig is BlueprintSledConfig.
type SledConfig struct {
	Datasets              json.RawMessage           `json:"datasets"`
	Disks                 json.RawMessage           `json:"disks"`
	HostPhase2            json.RawMessage           `json:"host_phase_2"`
	RemoveMupdateOverride *uuid.UUID                `json:"remove_mupdate_override"`
	SledAgentGeneration   uint64                    `json:"sled_agent_generation"`
	State                 string                    `json:"state"`
	Zones                 map[uuid.UUID]*ZoneConfig `json:"zones"`
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
	for sid, s := range bp.Sleds {
		if s == nil {
			return nil, fmt.Errorf("sled %s: config is null", sid)
		}
		for zid, z := range s.Zones {
			if z == nil || z.ID != zid {
				return nil, fmt.Errorf("sled %s: zones key %s does not match its zone's id", sid, zid)
			}
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
// OmicronZoneType: a Nexus zone loses lockstep_port and nexus_generation and
// its external IP becomes the bare address; a boundary NTP zone's external
// IP becomes its snat_cfg. Every other variant has the same fields.
func omicronZoneType(raw json.RawMessage) (sledagent.OmicronZoneType, error) {
	f, err := objectOf(raw)
	if err != nil {
		return sledagent.OmicronZoneType{}, err
	}
	kind, _ := f["type"].(string)
	if nic, ok := f["nic"].(map[string]any); ok {
		sledAgentNIC(nic)
	}
	switch kind {
	case sledagent.ZoneTypeNexus:
		delete(f, "lockstep_port")
		delete(f, "nexus_generation")
		if ext, ok := f["external_ip"].(map[string]any); ok {
			f["external_ip"] = ext["ip"]
		}
	case "boundary_ntp":
		if ext, ok := f["external_ip"].(map[string]any); ok {
			delete(f, "external_ip")
			f["snat_cfg"] = ext["snat_cfg"]
		}
	case "":
		return sledagent.OmicronZoneType{}, errors.New("zone_type has no type")
	}
	out, err := json.Marshal(f)
	return sledagent.OmicronZoneType{Type: kind, Raw: out}, err
}

// blueprintZoneType is the reverse, for the initial blueprint made from the
// sleds' ledgers: external IPs get IDs derived from the zone, a Nexus zone
// Nexus's lockstep port and nexus_generation.
func blueprintZoneType(zone uuid.UUID, zt sledagent.OmicronZoneType, nexusGeneration uint64) (json.RawMessage, error) {
	raw, err := json.Marshal(zt)
	if err != nil {
		return nil, err
	}
	f, err := objectOf(raw)
	if err != nil {
		return nil, err
	}
	if nic, ok := f["nic"].(map[string]any); ok {
		blueprintNIC(nic)
	}
	ipID := v4(uuid.NewSHA1(zone, []byte("external-ip"))).String()
	switch zt.Type {
	case sledagent.ZoneTypeNexus:
		f["external_ip"] = map[string]any{"id": ipID, "ip": f["external_ip"]}
		f["lockstep_port"] = lockstepPort
		f["nexus_generation"] = nexusGeneration
	case "boundary_ntp":
		f["external_ip"] = map[string]any{"id": ipID, "snat_cfg": f["snat_cfg"]}
		delete(f, "snat_cfg")
	}
	return json.Marshal(f)
}

// The lockstep document's NetworkInterface (0.0.1) carries ip, subnet and
// transit_ips; sled-agent 48.0.0's carries them in ip_config {type: v4 or
// v6, value}. blueprintNIC and sledAgentNIC convert in place, and a
// round trip gives back what the sled-agent ledgered.
func blueprintNIC(nic map[string]any) {
	cfg, ok := nic["ip_config"].(map[string]any)
	if !ok {
		return
	}
	delete(nic, "ip_config")
	if v, ok := cfg["value"].(map[string]any); ok {
		for k, x := range v {
			nic[k] = x
		}
	}
}

func sledAgentNIC(nic map[string]any) {
	ip, ok := nic["ip"].(string)
	if !ok {
		return
	}
	family := "v4"
	if strings.Contains(ip, ":") {
		family = "v6"
	}
	value := map[string]any{"ip": ip, "subnet": nic["subnet"]}
	if tips, ok := nic["transit_ips"].([]any); ok && (len(tips) > 0 || family == "v6") {
		value["transit_ips"] = tips
	}
	delete(nic, "ip")
	delete(nic, "subnet")
	delete(nic, "transit_ips")
	nic["ip_config"] = map[string]any{"type": family, "value": value}
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
