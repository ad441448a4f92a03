package mgsupdate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// The zone kinds whose loss a sled reboot must not risk, and how many of
// each the planner requires healthy before it lets one go down (omicron
// common/src/policy.rs; nexus/reconfigurator/preparation/src/lib.rs makes
// them the planning input's targets).
const (
	ZoneKindCockroachDB = "cockroach_db"
	ZoneKindInternalDNS = "internal_dns"
	ZoneKindBoundaryNTP = "boundary_ntp"

	// cockroachDBRedundancy is COCKROACHDB_REDUNDANCY.
	cockroachDBRedundancy = 5
	// internalDNSRedundancy is INTERNAL_DNS_REDUNDANCY: one upgrade and one
	// failure during it.
	internalDNSRedundancy = 3
	// boundaryNTPRedundancy is BOUNDARY_NTP_REDUNDANCY.
	boundaryNTPRedundancy = 2
)

// ZoneFacts is what the planner's zone safety checks read (omicron
// nexus/reconfigurator/planning/src/planner/zone_safety.rs): the
// blueprint's in-service zones, and inventory's health of them. A nil
// health list is a fact fleetsaga could not read (docs/GAPS.md): the
// check then counts every in-service zone of the kind as healthy, the most
// the real rule could count, so it still refuses what the real rule
// certainly refuses.
type ZoneFacts struct {
	// InService are the target blueprint's in-service zones of every sled.
	InService []SledZone
	// CockroachStatus is inventory's cockroach_status: one per node heard
	// from (the cockroach admin API).
	CockroachStatus []CockroachNodeStatus
	// NTPTimesync is inventory's ntp_timesync (the NTP admin API).
	NTPTimesync []ZoneTimesync
	// DNSGenerations is inventory's internal_dns_generation_status (each
	// DNS server's config generation), compared with InternalDNSVersion,
	// the database's internal DNS generation.
	DNSGenerations     []ZoneGeneration
	InternalDNSVersion uint64
}

// SledZone is one in-service zone and its sled.
type SledZone struct {
	Sled uuid.UUID `json:"sled"`
	Zone uuid.UUID `json:"zone"`
	Kind string    `json:"kind"`
}

// CockroachNodeStatus is one node's CockroachStatus (nil: stat missing).
type CockroachNodeStatus struct {
	RangesUnderreplicated *uint64
	LivenessLiveNodes     *uint64
}

// ZoneTimesync is one NTP zone's TimeSync.
type ZoneTimesync struct {
	Zone   uuid.UUID
	Synced bool
}

// ZoneGeneration is one internal DNS zone's generation.
type ZoneGeneration struct {
	Zone       uuid.UUID
	Generation uint64
}

// ZoneUnsafe is why one zone is unsafe to shut down (omicron
// ZoneUnsafeToShutdown in nexus/types/src/deployment/planning_report.rs):
// its kind, how many of the kind count as healthy, how many are in
// service, how many are required (zero when the reason is the planner's
// report, which gives them in Reason).
type ZoneUnsafe struct {
	Sled      uuid.UUID `json:"sled"`
	Zone      uuid.UUID `json:"zone"`
	Kind      string    `json:"kind"`
	Healthy   int       `json:"healthy"`
	InService int       `json:"inService"`
	Required  int       `json:"required"`
	// Reason is the detail (CockroachdbUnsafeToShutdown's, for CockroachDB).
	Reason string `json:"reason"`
}

func (u ZoneUnsafe) String() string {
	if u.Zone == uuid.Nil {
		return u.Reason
	}
	return fmt.Sprintf("%s zone %s: %s", u.Kind, u.Zone, u.Reason)
}

// SledUnsafeReasons is sled_unsafe_shutdown_reason: every in-service zone
// of the sled that is unsafe to shut down; none means the sled may reboot.
func SledUnsafeReasons(f ZoneFacts, sled uuid.UUID) []ZoneUnsafe {
	var out []ZoneUnsafe
	for _, z := range f.InService {
		if z.Sled != sled {
			continue
		}
		var u *ZoneUnsafe
		switch z.Kind {
		case ZoneKindBoundaryNTP:
			u = f.boundaryNTPUnsafe()
		case ZoneKindCockroachDB:
			u = f.cockroachUnsafe()
		case ZoneKindInternalDNS:
			u = f.internalDNSUnsafe()
		}
		if u != nil {
			u.Sled, u.Zone, u.Kind = sled, z.Zone, z.Kind
			out = append(out, *u)
		}
	}
	slices.SortFunc(out, func(a, b ZoneUnsafe) int { return strings.Compare(a.Zone.String(), b.Zone.String()) })
	return out
}

func (f ZoneFacts) inService(kind string) map[uuid.UUID]bool {
	m := map[uuid.UUID]bool{}
	for _, z := range f.InService {
		if z.Kind == kind {
			m[z.Zone] = true
		}
	}
	return m
}

// boundaryNTPUnsafe: fewer synchronized in-service boundary NTP zones than
// the target.
func (f ZoneFacts) boundaryNTPUnsafe() *ZoneUnsafe {
	return f.fewSynchronized(ZoneKindBoundaryNTP, "boundary NTP", boundaryNTPRedundancy, f.NTPTimesync != nil, func(zones map[uuid.UUID]bool) int {
		n := 0
		for _, t := range f.NTPTimesync {
			if zones[t.Zone] && t.Synced {
				n++
			}
		}
		return n
	})
}

// internalDNSUnsafe: fewer in-service internal DNS servers at exactly the
// database's generation than the target (older: the server is behind;
// newer: what the planner read is).
func (f ZoneFacts) internalDNSUnsafe() *ZoneUnsafe {
	return f.fewSynchronized(ZoneKindInternalDNS, "internal DNS", internalDNSRedundancy, f.DNSGenerations != nil, func(zones map[uuid.UUID]bool) int {
		n := 0
		for _, g := range f.DNSGenerations {
			if zones[g.Zone] && g.Generation == f.InternalDNSVersion {
				n++
			}
		}
		return n
	})
}

// fewSynchronized: fewer than required in-service zones of kind are
// synchronized (synced counts them when the fact was read; unread, every
// in-service zone counts).
func (f ZoneFacts) fewSynchronized(kind, what string, required int, read bool, synced func(map[uuid.UUID]bool) int) *ZoneUnsafe {
	zones := f.inService(kind)
	n := len(zones)
	if read {
		n = synced(zones)
	}
	if n >= required {
		return nil
	}
	return &ZoneUnsafe{Healthy: n, InService: len(zones), Required: required,
		Reason: fmt.Sprintf("only %d/%d %s zones are synchronized; require at least %d", n, len(zones), what, required)}
}

// cockroachUnsafe: every node must be heard from, and each must report no
// under-replicated ranges and at least the target's live nodes.
func (f ZoneFacts) cockroachUnsafe() *ZoneUnsafe {
	inService := len(f.inService(ZoneKindCockroachDB))
	unsafe := func(healthy int, format string, args ...any) *ZoneUnsafe {
		return &ZoneUnsafe{Healthy: healthy, InService: inService, Required: cockroachDBRedundancy,
			Reason: "cockroach unsafe to shut down: " + fmt.Sprintf(format, args...)}
	}
	if f.CockroachStatus == nil {
		if inService < cockroachDBRedundancy {
			return unsafe(inService, "not enough nodes: %d in service < %d", inService, cockroachDBRedundancy)
		}
		return nil
	}
	if len(f.CockroachStatus) < cockroachDBRedundancy {
		return unsafe(len(f.CockroachStatus), "not enough nodes: %d heard from < %d", len(f.CockroachStatus), cockroachDBRedundancy)
	}
	for _, s := range f.CockroachStatus {
		if s.RangesUnderreplicated == nil {
			return unsafe(0, "missing ranges_underreplicated stat")
		}
		if *s.RangesUnderreplicated != 0 {
			return unsafe(0, "%d > 0 underreplicated ranges", *s.RangesUnderreplicated)
		}
		if s.LivenessLiveNodes == nil {
			return unsafe(0, "missing live_nodes stat")
		}
		if *s.LivenessLiveNodes < cockroachDBRedundancy {
			return unsafe(int(*s.LivenessLiveNodes), "not enough live nodes: %d < %d", *s.LivenessLiveNodes, cockroachDBRedundancy)
		}
	}
	return nil
}
