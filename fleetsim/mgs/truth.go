package mgs

import (
	"time"
)

// Truth is the simulated state of every rack's MGS instances and SPs.
type Truth struct {
	Racks []RackTruth `json:"racks"`
}

// RackTruth is one rack.
type RackTruth struct {
	ID  string     `json:"id"`
	MGS []MGSTruth `json:"mgs"`
	SPs []SPTruth  `json:"sps"`
}

// MGSTruth is one MGS instance.
type MGSTruth struct {
	// Index is the instance's URL index (/mgs/{index}).
	Index int `json:"index"`
	// SledCubby is the sled this MGS runs on (it refuses to reset its SP).
	SledCubby    int           `json:"sled_cubby"`
	Down         bool          `json:"down"`
	Phase2Images []phase2Image `json:"phase2_images"`
	// Served is the last phase 2 request this MGS served, per SP ("sled/3").
	Served map[string]phase2Record `json:"served_phase2"`
}

// SlotTruth is what one firmware slot holds.
type SlotTruth = slotImage

// Phase2Truth is a phase 2 fetch record.
type Phase2Truth = phase2Record

// SPTruth is one SP, its host and every update it saw.
type SPTruth struct {
	Type   string `json:"type"`
	Slot   int    `json:"slot"`
	Serial string `json:"serial"`
	Model  string `json:"model"`
	// Rebooting: the SP is resetting and does not answer.
	Rebooting bool `json:"rebooting"`
	Resets    int  `json:"resets"`
	SP        struct {
		Active   SlotTruth `json:"active"`
		Inactive SlotTruth `json:"inactive"`
	} `json:"sp"`
	Host HostTruth `json:"host"`
	// Updates is each component's update status (SpUpdateStatus shape).
	Updates    map[string]map[string]any `json:"updates"`
	Deliveries []Delivery                `json:"deliveries"`
}

// HostTruth is the sled's host and boot flash.
type HostTruth struct {
	Slots          [2]SlotTruth `json:"slots"`
	ActiveSlot     int          `json:"active_slot"` // the slot the next boot uses
	PersistentSlot int          `json:"persistent_slot"`
	TransientSlot  *int         `json:"transient_slot,omitempty"`
	State          string       `json:"state"`
	BootedSlot     int          `json:"booted_slot"`
	// BootedPhase2 is the phase 2 image the running host booted (its ID,
	// the header SHA-256), from its disk or through the SP.
	BootedPhase2 string `json:"booted_phase2,omitempty"`
	// BootFailure says why the last boot failed (state phase2_missing).
	BootFailure string `json:"boot_failure,omitempty"`
	// Phase2Source: "recovery" (fetched through the SP) or "disk".
	Phase2Source string `json:"phase2_source,omitempty"`
	// StartupOptions are what the host reads from the SP at boot.
	StartupOptions StartupOptions `json:"startup_options"`
	Boots          int            `json:"boots"`
	// AttachedMGS is the MGS (URL index) the SP fetches phase 2 from.
	AttachedMGS *int `json:"attached_mgs,omitempty"`
	// Phase2 is the SP's record of the host's last fetched offset.
	Phase2 *Phase2Truth `json:"phase2,omitempty"`
}

// Truth implements domain.Domain.
func (d *Domain) Truth() any { return d.TruthSnapshot() }

// TruthSnapshot is the typed truth.
func (d *Domain) TruthSnapshot() Truth {
	now := time.Now()
	out := Truth{Racks: make([]RackTruth, 0, len(d.racks))}
	for _, r := range d.racks {
		rt := RackTruth{ID: r.spec.ID, SPs: make([]SPTruth, 0, len(r.order))}
		for _, m := range r.mgs {
			m.mu.Lock()
			mt := MGSTruth{Index: m.url, SledCubby: r.spec.MGSSleds[m.local], Down: d.mgsDown(m.url), Served: map[string]phase2Record{}}
			for _, img := range m.images {
				mt.Phase2Images = append(mt.Phase2Images, *img)
			}
			for k, v := range m.served {
				mt.Served[k] = v
			}
			m.mu.Unlock()
			rt.MGS = append(rt.MGS, mt)
		}
		for _, s := range r.order {
			rt.SPs = append(rt.SPs, s.truth(now))
		}
		out.Racks = append(out.Racks, rt)
	}
	return out
}

func (s *sp) truth(now time.Time) SPTruth {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := SPTruth{
		Type: s.typ, Slot: s.slot, Serial: s.serial, Model: s.model,
		Rebooting: now.Before(s.downUntil), Resets: s.resets,
		Updates:    map[string]map[string]any{},
		Deliveries: make([]Delivery, 0, len(s.deliveries)),
	}
	t.SP.Active, t.SP.Inactive = s.spSlots[0], s.spSlots[1]
	t.Host = HostTruth{
		Slots: s.host.slots, ActiveSlot: s.hostActive(), PersistentSlot: s.host.persistent,
		State: s.host.state, BootedSlot: s.host.bootedSlot, BootedPhase2: s.host.phase2, Boots: s.host.boots,
		Phase2Source: s.host.phase2Source, StartupOptions: s.host.startup, BootFailure: s.host.bootFailure,
	}
	if s.host.transient >= 0 {
		v := s.host.transient
		t.Host.TransientSlot = &v
	}
	if s.host.attached >= 0 {
		v := s.rack.mgs[s.host.attached].url
		t.Host.AttachedMGS = &v
	}
	if s.phase2 != nil {
		c := *s.phase2
		t.Host.Phase2 = &c
	}
	for _, c := range []string{CompSP, CompHost} {
		t.Updates[c] = s.status(now, c)
	}
	for _, d := range s.deliveries {
		t.Deliveries = append(t.Deliveries, *d)
	}
	return t
}
