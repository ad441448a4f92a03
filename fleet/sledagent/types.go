// Package sledagent is a typed client for the sled-agent API (the subset
// fleetsaga drives: PUT /omicron-config and GET /inventory). Shapes follow
// oxidecomputer/omicron's sled-agent OpenAPI document 48.0.0 (vendored in
// fleet/openapi/specs): same paths and field names, a subset of the fields.
package sledagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"
)

// OmicronSledConfig is the whole Reconfigurator-managed configuration of a
// sled. Zones is an IdOrdMapAsMap: a JSON object keyed by zone ID.
//
// Datasets, Disks, Measurements and HostPhase2 are carried opaquely so a
// config read from inventory can be sent back unchanged.
type OmicronSledConfig struct {
	Generation            uint64                          `json:"generation"`
	Zones                 map[uuid.UUID]OmicronZoneConfig `json:"zones"`
	Datasets              map[string]json.RawMessage      `json:"datasets"`
	Disks                 map[string]json.RawMessage      `json:"disks"`
	Measurements          []json.RawMessage               `json:"measurements"`
	HostPhase2            json.RawMessage                 `json:"host_phase_2,omitempty"`
	RemoveMupdateOverride *uuid.UUID                      `json:"remove_mupdate_override,omitempty"`
}

// OmicronZoneConfig describes one Omicron-managed zone.
type OmicronZoneConfig struct {
	ID             uuid.UUID       `json:"id"`
	FilesystemPool *string         `json:"filesystem_pool,omitempty"`
	ImageSource    json.RawMessage `json:"image_source,omitempty"`
	ZoneType       OmicronZoneType `json:"zone_type"`
}

// OmicronZoneType is the tagged zone type ({"type": "nexus", ...}). Only the
// tag is interpreted; every other field is kept verbatim.
type OmicronZoneType struct {
	Type string
	// Raw is the whole JSON object including "type" (nil when built from Type alone).
	Raw json.RawMessage
}

// ZoneTypeNexus is the zone type tag of Nexus zones.
const ZoneTypeNexus = "nexus"

// MarshalJSON writes Raw when present, else {"type": Type}.
func (t OmicronZoneType) MarshalJSON() ([]byte, error) {
	if len(t.Raw) > 0 {
		return t.Raw, nil
	}
	return json.Marshal(struct {
		Type string `json:"type"`
	}{t.Type})
}

// UnmarshalJSON requires an object with a non-empty string "type".
func (t *OmicronZoneType) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		return errors.New("zone_type must be a JSON object")
	}
	var typ string
	if err := json.Unmarshal(fields["type"], &typ); err != nil || typ == "" {
		return errors.New(`zone_type must have a non-empty string "type"`)
	}
	t.Type = typ
	t.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// NewSledConfig returns a config at generation gen with zones and empty
// datasets, disks and measurements (all required by the API).
func NewSledConfig(gen uint64, zones ...OmicronZoneConfig) OmicronSledConfig {
	c := OmicronSledConfig{Generation: gen, Zones: map[uuid.UUID]OmicronZoneConfig{}}
	for _, z := range zones {
		c.Zones[z.ID] = z
	}
	return c.Normalized()
}

// Normalized returns c with nil collections replaced by empty ones, so it
// encodes with every required field present.
func (c OmicronSledConfig) Normalized() OmicronSledConfig {
	if c.Zones == nil {
		c.Zones = map[uuid.UUID]OmicronZoneConfig{}
	}
	if c.Datasets == nil {
		c.Datasets = map[string]json.RawMessage{}
	}
	if c.Disks == nil {
		c.Disks = map[string]json.RawMessage{}
	}
	if c.Measurements == nil {
		c.Measurements = []json.RawMessage{}
	}
	return c
}

// Clone returns a deep-enough copy (maps copied; raw JSON shared read-only).
func (c OmicronSledConfig) Clone() OmicronSledConfig {
	out := c
	out.Zones = make(map[uuid.UUID]OmicronZoneConfig, len(c.Zones))
	for k, v := range c.Zones {
		out.Zones[k] = v
	}
	out.Datasets = make(map[string]json.RawMessage, len(c.Datasets))
	for k, v := range c.Datasets {
		out.Datasets[k] = v
	}
	out.Disks = make(map[string]json.RawMessage, len(c.Disks))
	for k, v := range c.Disks {
		out.Disks[k] = v
	}
	out.Measurements = append([]json.RawMessage{}, c.Measurements...)
	return out
}

// WithoutZone returns a copy at generation gen without zone id.
func (c OmicronSledConfig) WithoutZone(gen uint64, id uuid.UUID) OmicronSledConfig {
	out := c.Normalized().Clone()
	out.Generation = gen
	delete(out.Zones, id)
	return out
}

// ZoneIDs returns the zone IDs in a stable order.
func (c OmicronSledConfig) ZoneIDs() []uuid.UUID {
	ids := make([]uuid.UUID, 0, len(c.Zones))
	for id := range c.Zones {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
	return ids
}

// Canonical is the config's canonical JSON (object keys sorted, nil
// collections empty), used to decide "same generation, same contents".
func (c OmicronSledConfig) Canonical() ([]byte, error) {
	b, err := json.Marshal(c.Normalized())
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v) // maps re-encode with sorted keys
}

// SameContents reports whether a and b have the same canonical JSON.
func SameContents(a, b OmicronSledConfig) (bool, error) {
	ca, err := a.Canonical()
	if err != nil {
		return false, err
	}
	cb, err := b.Canonical()
	if err != nil {
		return false, err
	}
	return bytes.Equal(ca, cb), nil
}

// Validate checks what the API requires beyond JSON types: zone map keys
// equal the zone IDs, which are non-nil.
func (c OmicronSledConfig) Validate() error {
	for k, z := range c.Zones {
		if z.ID == uuid.Nil {
			return fmt.Errorf("zone %s: id is required", k)
		}
		if k != z.ID {
			return fmt.Errorf("zones map key %s does not match zone id %s", k, z.ID)
		}
		if z.ZoneType.Type == "" {
			return fmt.Errorf("zone %s: zone_type.type is required", k)
		}
	}
	return nil
}

// Inventory is the subset of the sled-agent's Inventory fleetsaga reads.
type Inventory struct {
	SledID           uuid.UUID    `json:"sled_id"`
	SledAgentAddress string       `json:"sled_agent_address,omitempty"`
	SledRole         string       `json:"sled_role,omitempty"`
	BaseboardID      *BaseboardID `json:"baseboard_id,omitempty"`
	// LedgeredSledConfig is the config the sled has committed to its ledger
	// (null before the first one).
	LedgeredSledConfig *OmicronSledConfig              `json:"ledgered_sled_config"`
	ReconcilerStatus   ConfigReconcilerInventoryStatus `json:"reconciler_status"`
	// LastReconciliation is the result of the last attempt to make the sled
	// match a config (null before the first one).
	LastReconciliation *ConfigReconcilerInventory `json:"last_reconciliation"`
}

// BaseboardID identifies the sled's hardware.
type BaseboardID struct {
	PartNumber   string `json:"part_number"`
	SerialNumber string `json:"serial_number"`
}

// ConfigReconcilerInventory is the last reconciliation attempt. Zones holds
// every zone the sled still has: running ({"result":"ok"}) or failed to shut
// down / to start ({"result":"err","message":...}). A zone absent from it is
// gone from the sled.
type ConfigReconcilerInventory struct {
	LastReconciledConfig OmicronSledConfig                             `json:"last_reconciled_config"`
	Zones                map[uuid.UUID]ConfigReconcilerInventoryResult `json:"zones"`
	Datasets             map[string]ConfigReconcilerInventoryResult    `json:"datasets"`
	ExternalDisks        map[string]ConfigReconcilerInventoryResult    `json:"external_disks"`
	OrphanedDatasets     []json.RawMessage                             `json:"orphaned_datasets"`
	// BootPartitions is what each boot disk holds and which one the host
	// booted from (required by the document; nil from a client's view
	// means the sled did not send it).
	BootPartitions *BootPartitions `json:"boot_partitions,omitempty"`
}

// ConfigReconcilerInventoryResult is {"result":"ok"} or {"result":"err","message":...}.
type ConfigReconcilerInventoryResult struct {
	Result  string `json:"result"`
	Message string `json:"message,omitempty"`
}

// Reconciler result tags.
const (
	ResultOK  = "ok"
	ResultErr = "err"
)

// ConfigReconcilerInventoryStatus is the reconciler task's state:
// not_yet_run | running{config, started_at, running_for} | idle{completed_at, ran_for}.
type ConfigReconcilerInventoryStatus struct {
	Status      string             `json:"status"`
	Config      *OmicronSledConfig `json:"config,omitempty"`
	StartedAt   *time.Time         `json:"started_at,omitempty"`
	RunningFor  *Duration          `json:"running_for,omitempty"`
	CompletedAt *time.Time         `json:"completed_at,omitempty"`
	RanFor      *Duration          `json:"ran_for,omitempty"`
}

// Reconciler status tags.
const (
	StatusNotYetRun = "not_yet_run"
	StatusRunning   = "running"
	StatusIdle      = "idle"
)

// Duration is the API's {secs, nanos}.
type Duration struct {
	Secs  uint64 `json:"secs"`
	Nanos uint32 `json:"nanos"`
}

// NewDuration converts a time.Duration (negative counts as zero).
func NewDuration(d time.Duration) *Duration {
	if d < 0 {
		d = 0
	}
	return &Duration{Secs: uint64(d / time.Second), Nanos: uint32(d % time.Second)}
}

// LedgeredGeneration is the ledgered config's generation (0 when none).
func (inv *Inventory) LedgeredGeneration() uint64 {
	if inv.LedgeredSledConfig == nil {
		return 0
	}
	return inv.LedgeredSledConfig.Generation
}

// ZonePresent reports whether the sled still has zone id (running, or
// failed to shut down), with its last result. Without a reconciliation the
// ledgered config is what runs.
func (inv *Inventory) ZonePresent(id uuid.UUID) (bool, ConfigReconcilerInventoryResult) {
	if inv.LastReconciliation == nil {
		if inv.LedgeredSledConfig != nil {
			if _, ok := inv.LedgeredSledConfig.Zones[id]; ok {
				return true, ConfigReconcilerInventoryResult{Result: ResultOK}
			}
		}
		return false, ConfigReconcilerInventoryResult{}
	}
	r, ok := inv.LastReconciliation.Zones[id]
	return ok, r
}

// ZoneGone is the inventory proof that zone is removed as of generation gen
// (docs/CONFORMANCE.md §E): the sled ledgered gen or later, its last reconciliation
// applied gen or later, and the zone is no longer on the sled (neither
// running nor failed to shut down). Today's sled-agent ledgers before it
// removes, so the ledger alone proves nothing. why says what is missing.
func (inv *Inventory) ZoneGone(zone uuid.UUID, gen uint64) (gone bool, why string) {
	if g := inv.LedgeredGeneration(); g < gen {
		return false, fmt.Sprintf("ledgered generation %d < %d", g, gen)
	}
	lr := inv.LastReconciliation
	if lr == nil {
		return false, "no reconciliation yet"
	}
	if g := lr.LastReconciledConfig.Generation; g < gen {
		return false, fmt.Sprintf("last reconciliation applied generation %d < %d (reconciler %s)", g, gen, inv.ReconcilerStatus.Status)
	}
	if r, ok := lr.Zones[zone]; ok {
		if r.Result == ResultErr {
			return false, "zone still on the sled: " + r.Message
		}
		return false, "zone still running"
	}
	return true, ""
}

// validate is the strict part of decoding an inventory: required fields and
// enum values. Unknown fields are tolerated because the real Inventory has
// many more required fields than fleetsaga models.
func (inv *Inventory) validate() error {
	if inv.SledID == uuid.Nil {
		return errors.New("inventory: sled_id is missing")
	}
	switch inv.ReconcilerStatus.Status {
	case StatusNotYetRun, StatusRunning, StatusIdle:
	default:
		return fmt.Errorf("inventory: unknown reconciler_status.status %q", inv.ReconcilerStatus.Status)
	}
	if inv.LedgeredSledConfig != nil {
		if err := inv.LedgeredSledConfig.Validate(); err != nil {
			return fmt.Errorf("inventory: ledgered_sled_config: %w", err)
		}
	}
	if lr := inv.LastReconciliation; lr != nil {
		if lr.Zones == nil {
			return errors.New("inventory: last_reconciliation.zones is missing")
		}
		for id, r := range lr.Zones {
			if r.Result != ResultOK && r.Result != ResultErr {
				return fmt.Errorf("inventory: zone %s: unknown result %q", id, r.Result)
			}
		}
	}
	return nil
}
