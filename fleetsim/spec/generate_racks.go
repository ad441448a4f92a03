package spec

import (
	"fmt"
	"math/rand"

	"github.com/google/uuid"
)

// Versions the generated racks start from. A rollout to a newer version
// (e.g. "1.1.0") finds every SP and host one step behind.
const (
	GeneratedSPActive     = "1.0.0"
	GeneratedSPInactive   = "0.9.0"
	GeneratedHostActive   = "1.0.0"
	GeneratedHostInactive = "0.9.0"
	// GeneratedPart is the sled SP part number (MGS reports it as "model").
	GeneratedPart = "913-0000019"
)

// nexusZonesPerFleet is how many Nexus zones a generated fleet has (a real
// rack runs three).
const nexusZonesPerFleet = 3

// GenerateRacks builds one rack holding nSleds sleds (cubbies 0..nSleds-1),
// all reached through one MGS pair, so a benchmark-sized fleet is addressed
// with fleet.FromFleetsim's two MGS URLs. (A real rack holds 32 sleds; the
// simulator does not enforce that.) Every UUID and serial follows seed.
//
// Each sled runs an ntp, an internal_dns and a crucible zone; three sleds
// spread over the rack also run a Nexus zone, and five CockroachDB zones
// are striped over the rack (stripeCockroach). SPs start at
// GeneratedSPActive/GeneratedSPInactive and host boot flash slot 0 (active)
// at GeneratedHostActive, slot 1 at GeneratedHostInactive. The MGS
// instances run on cubbies 14 and 16 as in a real rack, or on the first two
// sleds of a smaller rack.
func GenerateRacks(nSleds int, seed int64) []Rack {
	if nSleds <= 0 {
		return nil
	}
	rng := rand.New(rand.NewSource(seed))
	newID := func() uuid.UUID {
		var u uuid.UUID
		_, _ = rng.Read(u[:])
		u[6] = (u[6] & 0x0f) | 0x40 // version 4
		u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
		return u
	}
	rack := Rack{ID: fmt.Sprintf("rack-%04d", seed%10000)}
	switch {
	case nSleds > 16:
		rack.MGSSleds = []int{14, 16}
	case nSleds > 1:
		rack.MGSSleds = []int{0, 1}
	default:
		rack.MGSSleds = []int{0, 0}
	}
	nexusAt := map[int]bool{}
	for i := 0; i < nexusZonesPerFleet; i++ {
		// Spread the Nexus zones over the rack (several on one sled when
		// there are fewer sleds than Nexus zones).
		nexusAt[i*nSleds/nexusZonesPerFleet] = true
	}
	nexusCount := func(cubby int) int {
		n := 0
		for i := 0; i < nexusZonesPerFleet; i++ {
			if i*nSleds/nexusZonesPerFleet == cubby {
				n++
			}
		}
		return n
	}
	// Serials are unique per sled: a seeded prefix and the cubby.
	serialPrefix := 10 + rng.Intn(90)
	rack.Sleds = make([]Sled, 0, nSleds)
	for c := 0; c < nSleds; c++ {
		s := Sled{
			ID:     newID(),
			Cubby:  c,
			Serial: fmt.Sprintf("BRM%02d%06d", serialPrefix, c),
			Part:   GeneratedPart,
			SP:     SPFirmware{Active: GeneratedSPActive, Inactive: GeneratedSPInactive},
			Host: HostFlash{
				Slots:      [2]string{GeneratedHostActive, GeneratedHostInactive},
				ActiveSlot: 0,
			},
			Generation: 2,
		}
		s.Zones = append(s.Zones,
			Zone{ID: newID(), Kind: "internal_ntp"},
			Zone{ID: newID(), Kind: "internal_dns"},
			Zone{ID: newID(), Kind: "crucible"},
		)
		if nexusAt[c] {
			for i := 0; i < nexusCount(c); i++ {
				s.Zones = append(s.Zones, Zone{ID: newID(), Kind: ZoneKindNexus})
			}
		}
		rack.Sleds = append(rack.Sleds, s)
	}
	stripeCockroach(&rack, seed)
	return []Rack{rack}
}

// SampleRack is a small rack for tests: sled i runs zoneKinds[i] (at least
// two sleds, cubbies 0 and 1 run the MGS), every sled at generation 3 with
// SP 1.0.0 (0.9.0 inactive) and host flash 1.0.0 / 0.9.0.
func SampleRack(id string, zoneKinds ...[]string) Rack {
	rack := Rack{ID: id, MGSSleds: []int{0, 1}}
	for i := 0; i < max(2, len(zoneKinds)); i++ {
		sl := Sled{
			ID: uuid.New(), Cubby: i, Serial: fmt.Sprintf("BRM0000%02d", i), Part: "913-0000019",
			SP: SPFirmware{Active: "1.0.0", Inactive: "0.9.0"}, Host: HostFlash{Slots: [2]string{"1.0.0", "0.9.0"}},
			Generation: 3,
		}
		if i < len(zoneKinds) {
			for _, k := range zoneKinds[i] {
				sl.Zones = append(sl.Zones, Zone{ID: uuid.New(), Kind: k})
			}
		}
		rack.Sleds = append(rack.Sleds, sl)
	}
	return rack
}

// cockroachZonesPerRack is omicron's COCKROACHDB_REDUNDANCY
// (common/src/policy.rs): rack setup places that many CockroachDB zones.
const cockroachZonesPerRack = 5

// stripeCockroach places the rack's CockroachDB zones as rack setup does
// (omicron sled-agent/rack-setup/src/plan/service.rs: round robin over
// the sleds, continuing after the three internal DNS zones), each last on
// its sled so the other zones keep their places. Their IDs come from their
// own stream of seed, so every other ID of the rack is unchanged.
func stripeCockroach(rack *Rack, seed int64) {
	n := len(rack.Sleds)
	if n == 0 {
		return
	}
	rng := rand.New(rand.NewSource(seed ^ 0x5eed_c0c0))
	for i := 0; i < cockroachZonesPerRack; i++ {
		var id uuid.UUID
		_, _ = rng.Read(id[:])
		id[6] = (id[6] & 0x0f) | 0x40
		id[8] = (id[8] & 0x3f) | 0x80
		s := &rack.Sleds[(3+i)%n]
		s.Zones = append(s.Zones, Zone{ID: id, Kind: "cockroach_db"})
	}
}
