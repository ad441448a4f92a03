package sled

import (
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
)

// Truth is GET /truth/sled: the simulated sleds' and Nexus instances' real state.
type Truth struct {
	// NexusEnabled is false when fleetsim runs without a database: Nexus
	// zones exist but claim nothing.
	NexusEnabled bool         `json:"nexus_enabled"`
	Sleds        []SledTruth  `json:"sleds"`
	Nexus        []NexusTruth `json:"nexus"`
}

// SledTruth is one sled-agent's state.
type SledTruth struct {
	ID uuid.UUID `json:"id"`
	// Address is where the sled's own sled-agent listener is (ip:port).
	Address            string `json:"address"`
	LedgeredGeneration uint64 `json:"ledgered_generation"`
	// Zones are the zones present on the sled (running, or failed to shut down).
	Zones []ZoneTruth `json:"zones"`
	// RemovalAttempts counts removal attempts per zone.
	RemovalAttempts map[uuid.UUID]int `json:"removal_attempts"`
	// LastRemoval is the result of the last removal attempt per zone.
	LastRemoval map[uuid.UUID]sledagent.ConfigReconcilerInventoryResult `json:"last_removal"`
	// RemovedAt is when each removed zone was gone (its Nexus stopped).
	RemovedAt map[uuid.UUID]time.Time `json:"removed_at"`
	// Reconciling is true while a PUT /omicron-config is being applied.
	Reconciling bool `json:"reconciling"`
	// Host is the host on the sled's boot disks.
	Host HostTruth `json:"host"`
}

// HostTruth is the sled's host and its M.2 boot disks.
type HostTruth struct {
	// Up: the host runs and sled-agent answers.
	Up bool `json:"up"`
	// BootDisk is the disk the host last booted (or tried to): A or B.
	BootDisk string `json:"boot_disk"`
	// BootFailure says why the last boot failed ("" if it did not).
	BootFailure string `json:"boot_failure,omitempty"`
	// Disks is what M.2 A and B hold: the phase 2 ID (header SHA-256) and
	// the artifact hash, "" when none.
	Disks [2]DiskTruth `json:"disks"`
	// Artifacts are the artifact store's contents (hashes).
	Artifacts []string `json:"artifacts"`
}

// DiskTruth is one boot partition.
type DiskTruth struct {
	Phase2   string `json:"phase2,omitempty"`
	Artifact string `json:"artifact,omitempty"`
	Writes   int    `json:"writes"`
	Error    string `json:"error,omitempty"`
}

// ZoneTruth is one zone present on a sled.
type ZoneTruth struct {
	ID     uuid.UUID                                 `json:"id"`
	Kind   string                                    `json:"kind"`
	Result sledagent.ConfigReconcilerInventoryResult `json:"result"`
}

// NexusTruth is one Nexus instance (running or stopped).
type NexusTruth struct {
	ZoneID        uuid.UUID  `json:"zone_id"`
	SledID        uuid.UUID  `json:"sled_id"`
	Running       bool       `json:"running"`
	StartedAt     time.Time  `json:"started_at"`
	StoppedAt     *time.Time `json:"stopped_at,omitempty"`
	SagasCreated  int64      `json:"sagas_created"`
	SagasClaimed  int64      `json:"sagas_claimed"`
	SagasAdopted  int64      `json:"sagas_adopted"`
	SagasFinished int64      `json:"sagas_finished"`
	LastClaimAt   *time.Time `json:"last_claim_at,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
}

// Truth implements domain.Domain.
func (d *Domain) Truth() any { return d.Snapshot() }

// Snapshot returns the typed truth.
func (d *Domain) Snapshot() Truth {
	t := Truth{NexusEnabled: d.db != nil, Sleds: []SledTruth{}, Nexus: []NexusTruth{}}
	for _, id := range d.order {
		s := d.sleds[id]
		s.mu.Lock()
		st := SledTruth{
			ID:                 s.id,
			Address:            s.address,
			LedgeredGeneration: s.ledger.Generation,
			Zones:              []ZoneTruth{},
			RemovalAttempts:    make(map[uuid.UUID]int, len(s.attempts)),
			LastRemoval:        make(map[uuid.UUID]sledagent.ConfigReconcilerInventoryResult, len(s.lastRemoval)),
			RemovedAt:          make(map[uuid.UUID]time.Time, len(s.removedAt)),
			Reconciling:        s.running != nil,
			Host:               s.hostTruth(),
		}
		for zid, z := range s.zones {
			st.Zones = append(st.Zones, ZoneTruth{ID: zid, Kind: z.cfg.ZoneType.Type, Result: z.result})
		}
		for k, v := range s.attempts {
			st.RemovalAttempts[k] = v
		}
		for k, v := range s.lastRemoval {
			st.LastRemoval[k] = v
		}
		for k, v := range s.removedAt {
			st.RemovedAt[k] = v
		}
		s.mu.Unlock()
		slices.SortFunc(st.Zones, func(a, b ZoneTruth) int { return compareUUID(a.ID, b.ID) })
		t.Sleds = append(t.Sleds, st)
	}
	d.nexusMu.Lock()
	for _, n := range d.nexus {
		n.mu.Lock()
		nt := NexusTruth{
			ZoneID: n.zone, SledID: n.sled, Running: n.running, StartedAt: n.startedAt,
			SagasCreated: n.created, SagasClaimed: n.claimed, SagasAdopted: n.adopted,
			SagasFinished: n.finished, LastError: n.lastErr,
		}
		if !n.stoppedAt.IsZero() {
			at := n.stoppedAt
			nt.StoppedAt = &at
		}
		if !n.lastClaim.IsZero() {
			at := n.lastClaim
			nt.LastClaimAt = &at
		}
		n.mu.Unlock()
		t.Nexus = append(t.Nexus, nt)
	}
	d.nexusMu.Unlock()
	slices.SortFunc(t.Nexus, func(a, b NexusTruth) int { return compareUUID(a.ZoneID, b.ZoneID) })
	return t
}

// hostTruth snapshots the host and its disks. Caller holds s.mu.
func (s *sledAgent) hostTruth() HostTruth {
	h := HostTruth{Up: s.hostUp, BootDisk: sledagent.M2SlotOf(uint16(s.bootDisk)), BootFailure: s.bootFailure, Artifacts: []string{}}
	for i, dk := range s.disks {
		h.Disks[i] = DiskTruth{Writes: s.phase2Writes[i], Error: dk.err}
		if dk.image != nil {
			h.Disks[i].Phase2, h.Disks[i].Artifact = Phase2HeaderID(*dk.image), dk.image.ArtifactHash
		}
	}
	for a := range s.store {
		h.Artifacts = append(h.Artifacts, a)
	}
	slices.Sort(h.Artifacts)
	return h
}
