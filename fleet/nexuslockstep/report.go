package nexuslockstep

import (
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
)

// The redundancy each unsafe-zone reason is measured against (omicron
// common/src/policy.rs), as the report's Display says it.
const (
	boundaryNTPRedundancy = 2
	cockroachRedundancy   = 5
	internalDNSRedundancy = 3
)

// PlannerReport is the part of a blueprint's planning report (its source
// {source: planner, ...}: BlueprintSource in the lockstep document) that
// says which zones the planner holds unsafe to shut down. A blueprint
// loaded from the database has none (planner_loaded_from_database).
type PlannerReport struct {
	// UnsafeZones is zone_updates.unsafe_zones: the zones the planner did
	// not update because they are unsafe to shut down, by zone ID.
	UnsafeZones map[uuid.UUID]ZoneUnsafeToShutdown `json:"unsafe_zones"`
	// BlockedMGSUpdates is mgs_updates.blocked_mgs_updates.
	BlockedMGSUpdates []BlockedMGSUpdate `json:"blocked_mgs_updates"`
}

// ZoneUnsafeToShutdown is the report's reason (tagged by type:
// cockroachdb {reason}, boundary_ntp or internal_dns {total, synchronized}).
type ZoneUnsafeToShutdown struct {
	Type   string `json:"type"`
	Reason *struct {
		Type      string  `json:"type"`
		LiveNodes *uint64 `json:"live_nodes,omitempty"`
		N         *uint64 `json:"n,omitempty"`
	} `json:"reason,omitempty"`
	TotalBoundaryNTPZones int `json:"total_boundary_ntp_zones,omitempty"`
	TotalInternalDNSZones int `json:"total_internal_dns_zones,omitempty"`
	SynchronizedCount     int `json:"synchronized_count,omitempty"`
}

// String is omicron's Display of the reason (planning_report.rs).
func (z ZoneUnsafeToShutdown) String() string {
	switch z.Type {
	case "boundary_ntp":
		return fmt.Sprintf("only %d/%d boundary NTP zones are synchronized; require at least %d", z.SynchronizedCount, z.TotalBoundaryNTPZones, boundaryNTPRedundancy)
	case "internal_dns":
		return fmt.Sprintf("only %d/%d internal DNS zones are synchronized; require at least %d", z.SynchronizedCount, z.TotalInternalDNSZones, internalDNSRedundancy)
	case "cockroachdb":
		why := "unknown reason"
		if r := z.Reason; r != nil {
			switch r.Type {
			case "missing_live_nodes_stat":
				why = "missing live_nodes stat"
			case "missing_underreplicated_stat":
				why = "missing ranges_underreplicated stat"
			case "not_enough_live_nodes":
				why = fmt.Sprintf("not enough live nodes: %d < %d", deref(r.LiveNodes), cockroachRedundancy)
			case "not_enough_nodes":
				why = "not enough nodes"
			case "underreplicated_ranges":
				why = fmt.Sprintf("%d > 0 underreplicated ranges", deref(r.N))
			default:
				why = r.Type
			}
		}
		return "cockroach unsafe to shut down: " + why
	}
	return "unsafe to shut down (" + z.Type + ")"
}

func deref(v *uint64) uint64 {
	if v == nil {
		return 0
	}
	return *v
}

// BlockedMGSUpdate is one update the planner could not plan:
// reason {type: host_os|sp|rot|rot_bootloader, value: {type, value}}.
type BlockedMGSUpdate struct {
	BaseboardID struct {
		PartNumber   string `json:"part_number"`
		SerialNumber string `json:"serial_number"`
	} `json:"baseboard_id"`
	Reason struct {
		Type  string `json:"type"`
		Value struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value,omitempty"`
		} `json:"value"`
	} `json:"reason"`
}

// UnsafeZoneFound is the planner's unsafe_zone_found text when it blocked
// this update for the sled's zones (FailedHostOsUpdateReason or
// FailedSpUpdateReason), else "".
func (b BlockedMGSUpdate) UnsafeZoneFound() string {
	if b.Reason.Value.Type != "unsafe_zone_found" {
		return ""
	}
	var s string
	_ = json.Unmarshal(b.Reason.Value.Value, &s)
	return s
}

// PlannerReport returns the blueprint's planning report, when its source
// carries one.
func (bp *Blueprint) PlannerReport() (PlannerReport, bool) {
	raw, err := json.Marshal(bp.raw["source"])
	if err != nil {
		return PlannerReport{}, false
	}
	var src struct {
		Source      string        `json:"source"`
		MGSUpdates  PlannerReport `json:"mgs_updates"`
		ZoneUpdates PlannerReport `json:"zone_updates"`
	}
	if json.Unmarshal(raw, &src) != nil || src.Source != "planner" {
		return PlannerReport{}, false
	}
	return PlannerReport{UnsafeZones: src.ZoneUpdates.UnsafeZones, BlockedMGSUpdates: src.MGSUpdates.BlockedMGSUpdates}, true
}
