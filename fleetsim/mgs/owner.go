package mgs

import (
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Hooks for another control plane that updates SPs through this rack's MGS
// (fleetsim/nexus plays Nexus's MGS update driver). Its updates are
// "foreign" to every other client: MGS reports them like any update in
// flight, under their own IDs.

// ownerImageSize is the size of an owner's SP image (delivered at the
// spec's flash rate like any other).
const ownerImageSize = 1 << 20

// SPFirmware is what an owner's precheck reads of an SP's firmware.
type SPFirmware struct {
	Active, Inactive string // caboose versions ("" when the slot is invalid)
	// Busy is the ID of the update preparing or in progress on the SP, if any.
	Busy *uuid.UUID
	// Down: the SP is rebooting and does not answer.
	Down bool
}

// ReadSPFirmware reads SP typ/slot of rack (spec index).
func (d *Domain) ReadSPFirmware(rack int, typ string, slot int) (SPFirmware, error) {
	s, err := d.ownerSP(rack, typ, slot)
	if err != nil {
		return SPFirmware{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := SPFirmware{Active: s.spSlots[0].Version, Inactive: s.spSlots[1].Version, Down: time.Now().Before(s.downUntil)}
	if u := s.busy(); u != nil {
		id := u.id
		f.Busy = &id
	}
	return f, nil
}

// StartOwnerSPUpdate starts an update of the SP's firmware to version on
// behalf of owner, delivered by the rack's first MGS that is up (Nexus
// moves to the other MGS on a transport error); the owner resets the
// SP resetAfter the delivery completes, as Nexus's post-update does. The
// SP's refusals (another update in flight, a complete update not yet reset)
// are returned as errors.
func (d *Domain) StartOwnerSPUpdate(rack int, typ string, slot int, version, sha256, owner string, resetAfter time.Duration) (uuid.UUID, error) {
	s, err := d.ownerSP(rack, typ, slot)
	if err != nil {
		return uuid.Nil, err
	}
	h := ImageHeader{Component: CompSP, Version: version, Board: defaultBoard, Name: defaultImageName}
	info := imageInfo{SHA256: sha256, Size: ownerImageSize, Header: &h}
	m := s.rack.mgs[0]
	if d.mgsDown(m.url) {
		m = s.rack.mgs[1]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Now().Before(s.downUntil) {
		return uuid.Nil, fmt.Errorf("sp %s is rebooting", s.target())
	}
	u, serr := s.prepare(time.Now(), d.newUUID(), CompSP, 0, info, m.url, true)
	if serr != nil {
		return uuid.Nil, fmt.Errorf("sp %s refused the update: %s", s.target(), serr.msg)
	}
	u.foreignResetAfter = max(resetAfter, time.Nanosecond)
	u.rec.Note = owner + "'s update; " + owner + " resets the SP after it completes"
	d.goBackground(func() { d.deliver(s, u, m) })
	return u.id, nil
}

func (d *Domain) ownerSP(rack int, typ string, slot int) (*sp, error) {
	if rack < 0 || rack >= len(d.racks) {
		return nil, fmt.Errorf("no rack %d", rack)
	}
	s := d.racks[rack].sps[spKey(typ, slot)]
	if s == nil {
		return nil, fmt.Errorf("no SP %s/%d in rack %d", typ, slot, rack)
	}
	return s, nil
}
