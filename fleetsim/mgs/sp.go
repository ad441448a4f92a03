package mgs

import (
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// SP component names (hyphenated, as MGS and Hubris spell them).
const (
	CompSP      = "sp"
	CompHost    = "host-boot-flash"
	CompRoT     = "rot"
	CompStage0  = "stage0"
	CompSPAux   = "sp-aux-flash"
	maxCompName = 16 // SpComponent is a 16-byte identifier
)

// Update states, as in SpUpdateStatus's `state` tag.
const (
	StateNone       = "none"
	StatePreparing  = "preparing"
	StateInProgress = "in_progress"
	StateComplete   = "complete"
	StateAborted    = "aborted"
	StateFailed     = "failed"
)

// Host states (truth only; the MGS API shows them through power state and
// phase 2 progress).
const (
	HostRunning      = "running"
	HostOff          = "off"     // power state A2
	HostBooting      = "booting" // running phase 1 from flash
	HostFetching     = "fetching_phase2"
	HostPhase2Failed = "phase2_failed" // gave up fetching phase 2
	// HostPhase2Missing: the boot disk matching the active slot does not
	// hold the phase 2 its phase 1 names; the host does not boot.
	HostPhase2Missing = "phase2_missing"
	HostBootFailed    = "boot_failed" // the active slot holds no valid image
	// Where a running host's phase 2 came from (truth).
	Phase2FromDisk     = "disk"
	Phase2FromRecovery = "recovery"
	failedUpdateCode   = 0x0d // code the SP reports for an injected update failure
	defaultBoard       = "gimlet-e"
	defaultImageName   = "gimlet"
	hostPrepareUnits   = 512 // erase sectors reported as preparing progress
	phase2Tries        = 6   // the host gives up fetching after this many unanswered tries
	deliveryTick       = 20 * time.Millisecond
	phase2TryOther     = 500 * time.Millisecond
	phase2Retry        = time.Second
	spPrepareTime      = 2 * time.Second  // erase of the inactive SP bank
	hostPrepareTime    = 10 * time.Second // erase of a 32 MiB host flash slot
	hashTime           = 3 * time.Second  // SP hashing one host flash slot
	maxUpdateBody      = 64 << 20
	maxPhase2Body      = 512 << 20 // gateway-api HOST_PHASE2_MAX_BYTES
	phase2CachePerMGS  = 1         // host_phase2_recovery_image_cache_max_images in smf/mgs/config.toml
)

// slotImage is what one firmware slot holds.
type slotImage struct {
	Valid   bool   `json:"valid"`
	Version string `json:"version,omitempty"`
	Board   string `json:"board,omitempty"`
	Name    string `json:"name,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	Size    int64  `json:"size,omitempty"`
	// Phase2 is, for host phase 1 images, the phase 2 image it boots.
	Phase2 string `json:"phase2,omitempty"`
}

func initialImage(component, version string) slotImage {
	if version == "" {
		return slotImage{}
	}
	phase2 := ""
	if component == CompHost {
		// A phase 1 image boots the phase 2 it is paired with, which the
		// sled's disks hold at start (sled.InitialPhase2).
		phase2 = sled.Phase2HeaderID(sled.InitialPhase2(version))
	}
	return slotImage{
		Phase2:  phase2,
		Valid:   true,
		Version: version,
		Board:   defaultBoard,
		Name:    defaultImageName,
		SHA256:  SHA256Hex([]byte("fleetsim-initial:" + component + "/" + version)),
	}
}

func imageFromInfo(info imageInfo) slotImage {
	img := slotImage{Valid: true, SHA256: info.SHA256, Size: info.Size, Board: defaultBoard, Name: defaultImageName}
	if h := info.Header; h != nil {
		img.Version, img.Phase2 = h.Version, h.Phase2
		if h.Board != "" {
			img.Board = h.Board
		}
		if h.Name != "" {
			img.Name = h.Name
		}
	}
	return img
}

// Delivery is one update as the simulator saw it (truth).
type Delivery struct {
	UpdateID     uuid.UUID `json:"update_id"`
	Component    string    `json:"component"`
	FirmwareSlot int       `json:"firmware_slot"`
	// MGS is the instance (URL index, /mgs/{i}) that accepted the update
	// and delivers it.
	MGS     int    `json:"mgs"`
	Foreign bool   `json:"foreign"`
	Version string `json:"version,omitempty"`
	SHA256  string `json:"sha256"`
	Bytes   int64  `json:"bytes"`
	Total   int64  `json:"total_bytes"`
	// Outcome: in_progress, complete, aborted, failed, lost (SP reset).
	Outcome   string     `json:"outcome"`
	Note      string     `json:"note,omitempty"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
}

// update is the SP's state for one component's update.
type update struct {
	id           uuid.UUID
	component    string
	firmwareSlot int
	state        string
	bytes, total int64
	code         uint32
	prepareStart time.Time
	prepareUntil time.Time
	stuck        bool
	foreign      bool
	// foreignResetAfter: the foreign actor resets the SP this long after
	// its update completes (0: nobody does).
	foreignResetAfter time.Duration
	image             imageInfo
	rec               *Delivery
}

func (u *update) end(outcome, note string, now time.Time) {
	if u.rec.EndedAt != nil {
		return
	}
	u.rec.Outcome = outcome
	if note != "" {
		u.rec.Note = note
	}
	u.rec.EndedAt = &now
}

// phase2Record is the last host phase 2 request seen (by an SP or an MGS).
type phase2Record struct {
	Image  string    `json:"image_sha256"`
	Offset uint64    `json:"offset"`
	Total  uint64    `json:"total_size"`
	At     time.Time `json:"at"`
	MGS    int       `json:"mgs"` // URL index of the MGS that served it
}

// host is the sled's host CPU and its boot flash.
type host struct {
	slots      [2]slotImage
	hashReady  [2]time.Time // zero: hash not calculated
	persistent int
	transient  int // -1: none
	state      string
	// bootFailure says why the last boot failed (phase2_missing).
	bootFailure string
	bootedSlot  int
	phase2      string // phase 2 image the host booted (sha256)
	boots       int
	epoch       uint64
	attached    int // rack-local MGS index the SP fetches phase 2 from; -1 none
	// startup is what the host reads from the SP when it boots.
	startup StartupOptions
	// phase2Source says where the running host's phase 2 came from:
	// "disk" or "recovery" (fetched through the SP).
	phase2Source string
}

// sp is one simulated service processor.
type sp struct {
	rack   *rack
	typ    string
	slot   int
	sledID uuid.UUID // the sled whose host this SP runs
	serial string
	model  string

	mu        sync.Mutex
	epoch     uint64    // increments at every SP reset
	downUntil time.Time // the SP is rebooting and does not answer
	resets    int
	// spSlots[0] is the active SP bank, [1] the inactive one.
	spSlots    [2]slotImage
	host       host
	updates    map[string]*update
	deliveries []*Delivery
	phase2     *phase2Record // the SP's own record of the host's fetch
}

func newSP(r *rack, s spec.Sled) *sp {
	return &sp{
		rack:   r,
		typ:    "sled",
		slot:   s.Cubby,
		sledID: s.ID,
		serial: s.Serial,
		model:  s.Part,
		spSlots: [2]slotImage{
			initialImage(CompSP, s.SP.Active),
			initialImage(CompSP, s.SP.Inactive),
		},
		host: host{
			slots:        [2]slotImage{initialImage(CompHost, s.Host.Slots[0]), initialImage(CompHost, s.Host.Slots[1])},
			persistent:   s.Host.ActiveSlot,
			transient:    -1,
			state:        HostRunning,
			bootedSlot:   s.Host.ActiveSlot,
			attached:     -1,
			phase2Source: Phase2FromDisk,
		},
		updates: map[string]*update{},
	}
}

// target is the fault target of this SP.
func (s *sp) target() string { return fmt.Sprintf("sp/%s/%d", s.typ, s.slot) }

func (s *sp) faults() *faults.Registry { return s.rack.d.env.Faults }

// busy returns the component with an update preparing or in progress.
func (s *sp) busy() *update {
	for _, u := range s.updates {
		if u.state == StatePreparing || u.state == StateInProgress {
			return u
		}
	}
	return nil
}

// prepare starts an update of component after MGS received the whole image
// (SP-side rules 1 and 2). It returns the new update; delivery is the
// caller's job.
func (s *sp) prepare(now time.Time, id uuid.UUID, component string, fwSlot int, info imageInfo, mgsURL int, foreign bool) (*update, *spErr) {
	if component == CompSP {
		// MGS reads the SP's BORD before it sends prepare (mgs
		// gateway-sp-comms/src/single_sp/update.rs start_sp_update); the
		// SP checks the board again after the write.
		if have, img := s.board(), imageFromInfo(info).Board; img != have {
			return nil, &spErr{503, codeUpdateFailed, updateFailedSPPrefix + fmt.Sprintf("board mismatch: SP is %s but archive is for %s", have, img)}
		}
	}
	if u := s.busy(); u != nil {
		if u.component != component {
			return nil, refused(fmt.Sprintf("%s (%s, update %s)", msgOtherComponent, u.component, u.id))
		}
		return nil, &spErr{503, codeUpdateInProgress,
			fmt.Sprintf("update %s of %s is %s", u.id, u.component, u.state)}
	}
	if cur := s.updates[component]; cur != nil && component == CompSP {
		switch cur.state {
		case StateComplete:
			return nil, &spErr{503, codeUpdateInProgress,
				fmt.Sprintf("update %s is complete; the SP must be reset before another update", cur.id)}
		case StateFailed:
			return nil, &spErr{503, codeUpdateInProgress,
				fmt.Sprintf("update %s failed; it must be aborted before another update", cur.id)}
		}
	}
	if info.Size == 0 {
		return nil, &spErr{503, codeUpdateFailed, updateFailedSPPrefix + "update image cannot be empty"}
	}
	prep := spPrepareTime
	if component == CompHost {
		prep = hostPrepareTime
	}
	version := ""
	if info.Header != nil {
		version = info.Header.Version
	}
	rec := &Delivery{
		UpdateID: id, Component: component, FirmwareSlot: fwSlot, MGS: mgsURL, Foreign: foreign,
		Version: version, SHA256: info.SHA256, Total: info.Size, Outcome: StateInProgress, StartedAt: now,
	}
	u := &update{
		id: id, component: component, firmwareSlot: fwSlot, state: StatePreparing,
		total: info.Size, prepareStart: now, prepareUntil: now.Add(s.rack.d.env.Scale(prep)),
		foreign: foreign, image: info, rec: rec,
	}
	// Preparing erases the target slot: from now on it holds no valid image
	// until the delivery completes.
	s.invalidate(component, fwSlot)
	s.updates[component] = u
	s.deliveries = append(s.deliveries, rec)
	return u, nil
}

func (s *sp) invalidate(component string, fwSlot int) {
	switch component {
	case CompSP:
		s.spSlots[1] = slotImage{}
	case CompHost:
		s.host.slots[fwSlot] = slotImage{}
		s.host.hashReady[fwSlot] = time.Time{}
	}
}

// complete writes a fully delivered image to its slot.
func (s *sp) complete(now time.Time, u *update) {
	u.state = StateComplete
	u.bytes = u.total
	u.rec.Bytes = u.total
	img := imageFromInfo(u.image)
	switch u.component {
	case CompSP:
		s.spSlots[1] = img
	case CompHost:
		s.host.slots[u.firmwareSlot] = img
		s.host.hashReady[u.firmwareSlot] = time.Time{}
	}
	u.end(StateComplete, "", now)
}

// status returns the update status of component in SpUpdateStatus shape.
func (s *sp) status(now time.Time, component string) map[string]any {
	u := s.updates[component]
	if u == nil {
		return map[string]any{"state": StateNone}
	}
	switch u.state {
	case StatePreparing:
		out := map[string]any{"state": StatePreparing, "id": u.id, "progress": nil}
		if component == CompHost {
			span := u.prepareUntil.Sub(u.prepareStart)
			cur := int64(hostPrepareUnits)
			if span > 0 && now.Before(u.prepareUntil) {
				cur = int64(hostPrepareUnits) * int64(now.Sub(u.prepareStart)) / int64(span)
			}
			out["progress"] = map[string]any{"current": cur, "total": hostPrepareUnits}
		}
		return out
	case StateInProgress:
		return map[string]any{"state": StateInProgress, "id": u.id, "bytes_received": u.bytes, "total_bytes": u.total}
	case StateFailed:
		return map[string]any{"state": StateFailed, "id": u.id, "code": u.code}
	default: // complete, aborted
		return map[string]any{"state": u.state, "id": u.id}
	}
}

// abort implements SP-side rule 4: an update with another ID in progress
// and an update already complete are refused; an update already aborted,
// or no update in progress at all, is success that changes nothing.
func (s *sp) abort(now time.Time, component string, id uuid.UUID) *spErr {
	if b := s.busy(); b != nil && (b.component != component || b.id != id) {
		return refused(fmt.Sprintf("%s (update %s of %s is in progress, not %s)", msgAbortOtherID, b.id, b.component, id))
	}
	u := s.updates[component]
	if u == nil || u.id != id {
		return nil
	}
	switch u.state {
	case StateAborted:
		return nil
	case StateComplete:
		return refused(fmt.Sprintf("%s (update %s); too late to abort", msgAbortComplete, id))
	}
	u.state = StateAborted
	u.end(StateAborted, "", now)
	return nil
}

// reset reboots the SP: update state is lost, a complete SP update becomes
// active, and the host reboots. The caller holds s.mu.
func (s *sp) reset(now time.Time, why string) {
	s.epoch++
	s.resets++
	s.downUntil = now.Add(s.rack.d.env.Scale(s.rack.d.env.Spec.Timings.SPResetTime.Duration))
	if u := s.updates[CompSP]; u != nil && u.state == StateComplete {
		s.spSlots[0], s.spSlots[1] = s.spSlots[1], s.spSlots[0]
	}
	for _, u := range s.updates {
		if u.state == StatePreparing || u.state == StateInProgress || u.state == StateFailed {
			u.end("lost", "SP reset ("+why+") during the update; the slot stays partly written", now)
		}
	}
	s.updates = map[string]*update{}
	s.phase2 = nil
	s.rack.d.bootHost(s, now, s.downUntil)
}

// rollback undoes the bank swap of the last reset when the watchdog fired
// (MGS never disarmed it): the SP boots its previous image again.
func (s *sp) rollback(now time.Time) {
	s.spSlots[0], s.spSlots[1] = s.spSlots[1], s.spSlots[0]
	s.resets++
	s.epoch++
	s.downUntil = now.Add(s.rack.d.env.Scale(s.rack.d.env.Spec.Timings.SPResetTime.Duration))
}

// board is the SP's BORD: its running image's caboose.
func (s *sp) board() string {
	if b := s.spSlots[0].Board; s.spSlots[0].Valid && b != "" {
		return b
	}
	return defaultBoard
}

// hostActive is the host flash slot the next boot uses.
func (s *sp) hostActive() int {
	if s.host.transient >= 0 {
		return s.host.transient
	}
	return s.host.persistent
}
