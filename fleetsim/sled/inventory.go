package sled

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
)

// Fixed facts of every simulated sled. The sled-agent API document marks
// these inventory fields required, so a client generated from it rejects an
// inventory without them; fleetsim reports plausible constants (fleetsaga
// reads none of them).
const (
	simCPUFamily       = "amd_milan"
	simHardwareThreads = 128
	simPhysicalRAM     = 1 << 40 // 1 TiB
	simReservoir       = 512 << 30
)

// fullInventory is GET /inventory as the real sled-agent sends it: the
// fields fleetsaga's client reads (sledagent.Inventory) plus every other
// field the document requires.
type fullInventory struct {
	sledagent.Inventory

	CPUFamily                   string            `json:"cpu_family"`
	Datasets                    []json.RawMessage `json:"datasets"`
	Disks                       []json.RawMessage `json:"disks"`
	Zpools                      []json.RawMessage `json:"zpools"`
	FileSourceResolver          json.RawMessage   `json:"file_source_resolver"`
	Fmd                         json.RawMessage   `json:"fmd"`
	ReferenceMeasurements       []json.RawMessage `json:"reference_measurements"`
	ReservoirSize               uint64            `json:"reservoir_size"`
	SmfServicesEnabledNotOnline json.RawMessage   `json:"smf_services_enabled_not_online"`
	UsableHardwareThreads       uint32            `json:"usable_hardware_threads"`
	UsablePhysicalRAM           uint64            `json:"usable_physical_ram"`
}

// The install dataset's manifests: no mupdate has happened on a simulated sled.
var fileSourceResolverJSON = json.RawMessage(`{
 "zone_manifest": {"boot_disk_path": "/pool/int/install/zones", "non_boot_status": [],
  "boot_inventory": {"ok": {"artifacts": [], "source": {"source": "sled_agent"}}}},
 "measurement_manifest": {"boot_disk_path": "/pool/int/install/measurements", "non_boot_status": [],
  "boot_inventory": {"ok": {"artifacts": [], "source": {"source": "sled_agent"}}}},
 "mupdate_override": {"boot_disk_path": "/pool/int/install/mupdate-override.json", "non_boot_status": [],
  "boot_override": {"ok": null}}}`)

// zoneType returns a zone's whole OmicronZoneType: the variant's required
// fields with plausible values derived from the zone ID (n numbers the
// zone on its sled, for addresses).
// nexusLockstepPort is a Nexus zone's lockstep port as rack setup plans it
// (omicron sled-agent/rack-setup/src/plan/service.rs, NEXUS_LOCKSTEP_PORT).
const nexusLockstepPort = 12232

func zoneType(kind string, zone uuid.UUID, n int) sledagent.OmicronZoneType {
	addr := fmt.Sprintf("[fd00:1122:3344:101::%x]", 0x20+n)
	pool := map[string]any{"pool_name": "oxp_" + v4(uuid.NewSHA1(zone, []byte("pool"))).String()}
	nic := func(kindName string, subnet, ip string) map[string]any {
		return map[string]any{
			"id":        v4(uuid.NewSHA1(zone, []byte("nic"))).String(),
			"ip_config": map[string]any{"type": "v4", "value": map[string]any{"ip": ip, "subnet": subnet}},
			"kind":      map[string]any{"type": "service", "id": zone.String()},
			"mac":       fmt.Sprintf("a8:40:25:ff:%02x:%02x", zone[0], zone[1]),
			"name":      kindName + "-" + zone.String(),
			"primary":   true,
			"slot":      0,
			"vni":       100,
		}
	}
	f := map[string]any{"type": kind}
	switch kind {
	case "nexus":
		f["internal_address"] = addr + ":12221"
		f["lockstep_port"] = nexusLockstepPort
		f["external_ip"] = fmt.Sprintf("192.0.2.%d", 10+n)
		f["external_tls"] = true
		f["external_dns_servers"] = []string{"192.0.2.2"}
		f["nic"] = nic("nexus", "172.30.2.0/24", fmt.Sprintf("172.30.2.%d", 5+n))
	case "internal_ntp", "crucible_pantry", "oximeter":
		f["address"] = addr + ":123"
	case "boundary_ntp":
		f["address"] = addr + ":123"
		f["dns_servers"] = []string{"fd00:1122:3344:1::1"}
		f["ntp_servers"] = []string{"ntp.example.com"}
		f["nic"] = nic("ntp", "172.30.3.0/24", fmt.Sprintf("172.30.3.%d", 5+n))
		f["snat_cfg"] = map[string]any{"ip": "192.0.2.3", "first_port": 0, "last_port": 16383}
	case "crucible", "cockroach_db", "clickhouse", "clickhouse_keeper", "clickhouse_server":
		f["address"] = addr + ":32345"
		f["dataset"] = pool
	case "internal_dns":
		f["dataset"] = pool
		f["dns_address"] = addr + ":53"
		f["http_address"] = addr + ":5353"
		f["gz_address"] = "fd00:1122:3344:1::2"
		f["gz_address_index"] = 0
	case "external_dns":
		f["dataset"] = pool
		f["dns_address"] = fmt.Sprintf("192.0.2.%d:53", 100+n)
		f["http_address"] = addr + ":5353"
		f["nic"] = nic("external-dns", "172.30.1.0/24", fmt.Sprintf("172.30.1.%d", 5+n))
	}
	raw, _ := json.Marshal(f)
	return sledagent.OmicronZoneType{Type: kind, Raw: raw}
}

// fullInventoryOf wraps the client-visible inventory with the rest.
func fullInventoryOf(inv sledagent.Inventory) fullInventory {
	out := fullInventory{
		Inventory:                   inv,
		CPUFamily:                   simCPUFamily,
		Datasets:                    []json.RawMessage{},
		Disks:                       []json.RawMessage{},
		Zpools:                      []json.RawMessage{},
		FileSourceResolver:          fileSourceResolverJSON,
		Fmd:                         json.RawMessage(`{"ok": {"cases": [], "resources": []}}`),
		ReferenceMeasurements:       []json.RawMessage{},
		ReservoirSize:               simReservoir,
		SmfServicesEnabledNotOnline: json.RawMessage(fmt.Sprintf(`{"type": "svcs_enabled_not_online", "value": {"errors": [], "services": [], "time_of_status": %q}}`, time.Now().UTC().Format(time.RFC3339Nano))),
		UsableHardwareThreads:       simHardwareThreads,
		UsablePhysicalRAM:           simPhysicalRAM,
	}
	return out
}

// v4 marks a derived UUID as version 4 (the document's typed UUIDs, e.g.
// ZpoolName, only accept that shape).
func v4(u uuid.UUID) uuid.UUID {
	u[6] = (u[6] & 0x0f) | 0x40
	u[8] = (u[8] & 0x3f) | 0x80
	return u
}
