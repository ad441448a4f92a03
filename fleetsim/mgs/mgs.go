// Package mgs simulates the management gateway service (MGS) of each rack:
// two MGS instances per rack that both reach every SP, the SPs with their
// firmware slots and update state machine, and each sled's host with its
// boot flash and phase 2 fetch through the SP.
//
// Rack r is served by the MGS instances /mgs/{2r} and /mgs/{2r+1}, each
// speaking the real MGS API (paths, field names, tagged enums and status
// codes of mgs-openapi-3.0.0.json) below its prefix. The SP is the source of
// truth for update state; MGS only delivers images in the background and
// keeps no update state of its own (docs/CONFORMANCE.md §A). Truth is at /truth/mgs.
//
// The default is today's MGS (docs/CONFORMANCE.md §H): dropshot error bodies with
// today's codes, SP refusals as 503 SpCommunicationFailed, no caboose for
// host-boot-flash, startup options deciding whether the host fetches phase 2
// through the SP, and host-phase2-progress answering only what that MGS
// served. The SP's own phase 2 record is the opt-in spec.Rack.SPPhase2Record.
// Every other difference from the real MGS is listed in
// fleetsim/DEVIATIONS.md.
//
// Faults consulted (targets in fleetsim/faults):
//
//   - mgs_down mgs/<i>: every request to instance i gets 503
//     ServiceUnavailable; its background deliveries die (the SP then shows no
//     progress); the SP's phase 2 fetch no longer gets answers from it; a
//     reset it triggered is not followed by the watchdog disarm, so the SP
//     rolls back.
//   - sp_reset_mid_delivery sp/<type>/<slot>: the SP resets once delivery
//     passes AfterPercent.
//   - sp_stuck sp/<type>/<slot>: delivery stops making progress at AfterPercent.
//   - update_failed sp/<type>/<slot>: the SP reports failed{code} at AfterPercent.
//   - foreign_update sp/<type>/<slot>: at the next update request, someone
//     else's update (version Fault.Version, or the requested image's version)
//     starts first, delivered by the other MGS. If Fault.Latency is set, the
//     foreign actor resets the SP that long after its update completes
//     (wall-clock); otherwise nobody resets it.
//   - reset_reply_lost sp/<type>/<slot>: the reset happens but its reply is
//     lost (the connection is closed without a response), as when a reply
//     times out.
//   - latency / error_rate api/mgs/<i>: through faults.Middleware.
package mgs

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/fleetsaga/fleetsaga/fleetsim/domain"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// Name is the domain's key under /truth.
const Name = "mgs"

// APIVersion is the MGS API version fleetsim serves (the newest it
// accepts in the api-version header): mgs-openapi-3.0.0.json's.
const APIVersion = "3.0.0"

// Domain is the simulated MGS pairs and their SPs.
type Domain struct {
	env    domain.Env
	log    zerolog.Logger
	racks  []*rack
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	rngMu sync.Mutex
	rng   *rand.Rand

	// sleds are the hosts' sled-agents and boot disks (Link): a host boots
	// only the phase 2 its boot disk holds. nil: no sled domain.
	sleds *sled.Domain
}

// Link implements domain.Linker: the sled domain holds each host's boot
// disks and sled-agent.
func (d *Domain) Link(others []domain.Domain) error {
	for _, o := range others {
		if s, ok := o.(*sled.Domain); ok {
			d.sleds = s
		}
	}
	return nil
}

// hostDown tells the sled's sled-agent its host went down.
func (d *Domain) hostDown(s *sp) {
	if d.sleds != nil {
		d.sleds.HostDown(s.sledID)
	}
}

type rack struct {
	d     *Domain
	index int
	spec  spec.Rack
	sps   map[string]*sp // "sled/3"
	order []*sp
	mgs   [2]*instance
}

// instance is one MGS process.
type instance struct {
	rack  *rack
	local int // 0 or 1 within the rack
	url   int // /mgs/{url}

	mu     sync.Mutex
	images []*phase2Image          // recovery images cached in memory
	served map[string]phase2Record // "sled/3" → last phase 2 request this MGS served
}

// phase2Image is a recovery image an MGS holds: its ID (the header's
// SHA-256, what the host asks for), the file's SHA-256 (what sled-agent
// would name it by) and its size.
type phase2Image struct {
	SHA256         string    `json:"sha256"`
	ArtifactSHA256 string    `json:"artifact_sha256"`
	Size           int64     `json:"size"`
	LastUsed       time.Time `json:"last_used"`
}

// New is the domain constructor (domain.Constructor).
func New(ctx context.Context, env domain.Env) (domain.Domain, error) {
	return NewDomain(ctx, env)
}

// NewDomain builds the simulated MGS instances and SPs from env.Spec.Racks.
func NewDomain(_ context.Context, env domain.Env) (*Domain, error) {
	if env.Spec == nil {
		return nil, fmt.Errorf("mgs: no spec")
	}
	if env.Faults == nil {
		env.Faults = faults.NewRegistry(env.Spec.Seed)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Domain{
		env:    env,
		log:    env.Log.With().Str("domain", Name).Logger(),
		ctx:    ctx,
		cancel: cancel,
		rng:    rand.New(rand.NewSource(env.Spec.Seed ^ 0x6d6773)),
	}
	for ri, rs := range env.Spec.Racks {
		r := &rack{d: d, index: ri, spec: rs, sps: map[string]*sp{}}
		for i := range r.mgs {
			r.mgs[i] = &instance{rack: r, local: i, url: 2*ri + i, served: map[string]phase2Record{}}
		}
		for _, s := range rs.Sleds {
			p := newSP(r, s)
			r.sps[spKey(p.typ, p.slot)] = p
			r.order = append(r.order, p)
		}
		d.racks = append(d.racks, r)
	}
	return d, nil
}

func spKey(typ string, slot int) string { return typ + "/" + strconv.Itoa(slot) }

// Name implements domain.Domain.
func (d *Domain) Name() string { return Name }

// Close stops every delivery, host boot and phase 2 fetch.
func (d *Domain) Close() error {
	d.cancel()
	d.wg.Wait()
	return nil
}

func (d *Domain) newUUID() uuid.UUID {
	d.rngMu.Lock()
	defer d.rngMu.Unlock()
	var u uuid.UUID
	_, _ = d.rng.Read(u[:])
	u[6] = (u[6] & 0x0f) | 0x40
	u[8] = (u[8] & 0x3f) | 0x80
	return u
}

// go runs f in the background until Close.
func (d *Domain) goBackground(f func()) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		f()
	}()
}

// sleep waits for dur or until Close; it reports false on Close.
func (d *Domain) sleep(dur time.Duration) bool {
	if dur <= 0 {
		return d.ctx.Err() == nil
	}
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-d.ctx.Done():
		return false
	}
}

// mgsDown reports whether instance url is down (without consuming a firing).
func (d *Domain) mgsDown(url int) bool {
	_, down := d.env.Faults.Peek(faults.MGSDown, "mgs/"+strconv.Itoa(url))
	return down
}

// pace picks the tick of a transfer expected to take secs seconds: about
// 50 steps, but no faster than deliveryTick and no slower than a second, so
// a thousand concurrent transfers do not wake the process needlessly.
func pace(secs float64) time.Duration {
	t := time.Duration(secs * float64(time.Second) / 50)
	return min(max(t, deliveryTick), time.Second)
}

// deliver is the background task of the MGS that accepted update u: it
// streams the image to the SP chunk by chunk at the flash write rate. It
// dies (only logged, as in MGS) when the SP no longer accepts its chunks:
// the SP was reset, the update was aborted or replaced, or its MGS is down.
func (d *Domain) deliver(s *sp, u *update, m *instance) {
	s.mu.Lock()
	epoch := s.epoch
	s.mu.Unlock()
	rate := float64(d.env.Spec.Timings.FlashBytesPerSecond) * d.env.Spec.SpeedUp
	if rate <= 0 {
		rate = 1 << 30
	}
	tick := pace(float64(u.total) / rate)
	chunk := int64(rate * tick.Seconds())
	if chunk < 1 {
		chunk = 1
	}
	log := d.log.With().Str("sp", s.target()).Str("update_id", u.id.String()).Int("mgs", m.url).Logger()
	for {
		if !d.sleep(tick) {
			return
		}
		now := time.Now()
		s.mu.Lock()
		if s.epoch != epoch || s.updates[u.component] != u {
			s.mu.Unlock()
			log.Debug().Msg("delivery task ends: SP no longer has this update (InvalidUpdateId)")
			return
		}
		if u.state != StatePreparing && u.state != StateInProgress {
			s.mu.Unlock()
			return
		}
		if d.mgsDown(m.url) {
			u.rec.Note = fmt.Sprintf("delivery task died at %d/%d bytes: mgs/%d went down", u.bytes, u.total, m.url)
			s.mu.Unlock()
			log.Info().Msg("delivery task dies: MGS down")
			return
		}
		if u.state == StatePreparing {
			if now.Before(u.prepareUntil) {
				s.mu.Unlock()
				continue
			}
			u.state = StateInProgress
		}
		if u.stuck {
			s.mu.Unlock()
			continue
		}
		next := min(u.total, u.bytes+chunk)
		if !u.foreign && d.deliveryFault(s, u, next, now) {
			s.mu.Unlock()
			return
		}
		if u.stuck {
			s.mu.Unlock()
			continue
		}
		u.bytes, u.rec.Bytes = next, next
		if u.bytes >= u.total {
			s.complete(now, u)
			after := u.foreignResetAfter
			s.mu.Unlock()
			if after > 0 {
				d.foreignReset(s, u, after)
			}
			return
		}
		s.mu.Unlock()
	}
}

// deliveryFault applies the delivery faults armed for s once the delivery
// reaches next bytes. It reports true when the delivery ends. Holds s.mu.
func (d *Domain) deliveryFault(s *sp, u *update, next int64, now time.Time) bool {
	pct := int(next * 100 / u.total)
	reg := d.env.Faults
	if f, ok := reg.Peek(faults.SPResetMidDelivery, s.target()); ok && pct >= f.AfterPercent {
		reg.Fire(faults.SPResetMidDelivery, s.target())
		u.bytes, u.rec.Bytes = next, next
		s.reset(now, "injected sp_reset_mid_delivery")
		return true
	}
	if f, ok := reg.Peek(faults.UpdateFailed, s.target()); ok && pct >= f.AfterPercent {
		reg.Fire(faults.UpdateFailed, s.target())
		u.bytes, u.rec.Bytes = next, next
		u.state, u.code = StateFailed, failedUpdateCode
		u.end(StateFailed, "injected update_failed", now)
		return true
	}
	if f, ok := reg.Peek(faults.SPStuck, s.target()); ok && pct >= f.AfterPercent {
		reg.Fire(faults.SPStuck, s.target())
		u.stuck = true
		u.rec.Note = fmt.Sprintf("injected sp_stuck at %d/%d bytes", u.bytes, u.total)
	}
	return false
}

// startForeign starts someone else's update of component on s, delivered by
// the MGS other than accepting. Holds s.mu.
func (d *Domain) startForeign(s *sp, now time.Time, f faults.Fault, component string, fwSlot int, ours imageInfo, accepting *instance) {
	h := ImageHeader{Component: component, Version: f.Version}
	if ours.Header != nil {
		h.Board, h.Name, h.Phase2 = ours.Header.Board, ours.Header.Name, ours.Header.Phase2
		if h.Version == "" {
			h.Version = ours.Header.Version
		}
	}
	info := imageInfo{
		SHA256: SHA256Hex([]byte("fleetsim-foreign:" + component + "/" + h.Version)),
		Size:   ours.Size,
		Header: &h,
	}
	if component == CompHost && ours.Header != nil && h.Version == ours.Header.Version {
		// Another driver of the same host update (as in omicron's
		// nexus/mgs-updates/src/driver_update/test_host_phase_1.rs, two
		// Nexus instances driving one request) writes the same phase 1:
		// MGS knows a host flash slot only by its hash.
		info.SHA256 = ours.SHA256
	}
	other := s.rack.mgs[1-accepting.local]
	u, err := s.prepare(now, d.newUUID(), component, fwSlot, info, other.url, true)
	if err != nil {
		d.log.Debug().Str("sp", s.target()).Str("err", err.Error()).Msg("foreign update not started")
		return
	}
	if delay := f.LatencyDuration(); delay > 0 {
		u.foreignResetAfter = delay
		u.rec.Note = "the foreign actor resets the SP " + delay.String() + " after completion"
	} else {
		u.rec.Note = "nobody resets the SP after this foreign update"
	}
	d.goBackground(func() { d.deliver(s, u, other) })
}

// foreignReset is the foreign actor resetting the SP after its update.
func (d *Domain) foreignReset(s *sp, u *update, after time.Duration) {
	d.goBackground(func() {
		if !d.sleep(after) {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if cur := s.updates[u.component]; cur == u && u.state == StateComplete {
			// The foreign actor's post-update is Nexus's (omicron
			// nexus/mgs-updates/src/sp_updater.rs: reset the SP;
			// host_phase1_updater.rs: make the written slot active, then
			// reset the SP, which restarts the host): one reset either way.
			if u.component == CompHost {
				s.host.persistent = u.firmwareSlot
			}
			s.reset(time.Now(), "foreign actor")
		}
	})
}

// bootFromDisk boots the host from the disk matching slot: ok only when it
// holds phase 2 want. Without a sled domain every disk holds it.
func (d *Domain) bootFromDisk(s *sp, slot int, want string) (bool, string) {
	if d.sleds == nil {
		return true, ""
	}
	return d.sleds.BootHost(s.sledID, slot, want)
}

// bootHost reboots the host: after the host boot time it runs phase 1 from
// the active boot flash slot, then fetches the phase 2 image that phase 1
// names through the SP. startAt is when the host starts booting (after an
// SP reset, when the SP is back). Holds s.mu.
func (d *Domain) bootHost(s *sp, _ time.Time, startAt time.Time) {
	s.host.epoch++
	s.host.boots++
	s.host.state = HostBooting
	s.host.attached = -1
	s.host.phase2, s.host.phase2Source, s.host.bootFailure = "", "", ""
	d.hostDown(s)
	epoch := s.host.epoch
	bootAt := startAt.Add(d.env.Scale(d.env.Spec.Timings.HostBootTime.Duration))
	d.goBackground(func() {
		if !d.sleep(time.Until(bootAt)) {
			return
		}
		s.mu.Lock()
		if s.host.epoch != epoch {
			s.mu.Unlock()
			return
		}
		slot := s.hostActive()
		s.host.transient = -1
		s.host.bootedSlot = slot
		img := s.host.slots[slot]
		switch {
		case !img.Valid:
			s.host.state = HostBootFailed
			s.host.phase2 = ""
			s.mu.Unlock()
			return
		case img.Phase2 == "" || !s.host.startup.Phase2RecoveryMode:
			// Without phase2_recovery_mode in the SP's startup options
			// the host boots the phase 2 on the disk matching the slot,
			// and only the one its phase 1 names.
			if ok, why := d.bootFromDisk(s, slot, img.Phase2); !ok {
				s.host.state, s.host.bootFailure = HostPhase2Missing, why
				s.mu.Unlock()
				return
			}
			s.host.state = HostRunning
			s.host.phase2, s.host.phase2Source = img.Phase2, Phase2FromDisk
			s.mu.Unlock()
			return
		}
		s.host.state = HostFetching
		want := img.Phase2
		s.mu.Unlock()
		d.fetchPhase2(s, epoch, want)
	})
}

// fetchPhase2 is the host fetching its phase 2 image through the SP. The SP
// asks both MGS instances and sticks with the first that answers until it
// stops answering; then it tries the other after 500 ms, retries after 1 s
// and gives up after 6 unanswered tries. Each MGS records what it served
// itself (the end of the chunk, so a finished fetch shows 100%); the SP
// keeps its own record too, which MGS answers with only in the opt-in
// SPPhase2Record mode.
func (d *Domain) fetchPhase2(s *sp, epoch uint64, want string) {
	rate := float64(d.env.Spec.Timings.Phase2BytesPerSecond) * d.env.Spec.SpeedUp
	if rate <= 0 {
		rate = 1 << 30
	}
	var tick time.Duration
	var chunk uint64
	var offset uint64
	misses := 0
	for {
		s.mu.Lock()
		if s.host.epoch != epoch {
			s.mu.Unlock()
			return
		}
		r := s.rack
		// Candidates: the attached MGS first, else both in the order the
		// multicast answers arrive (deterministic per SP).
		var order []int
		if s.host.attached >= 0 {
			order = []int{s.host.attached}
		} else {
			first := (s.slot + int(d.env.Spec.Seed)) & 1
			order = []int{first, 1 - first}
		}
		served := false
		for _, li := range order {
			m := r.mgs[li]
			if d.mgsDown(m.url) {
				continue
			}
			size, ok := m.image(want)
			if !ok {
				continue
			}
			if chunk == 0 {
				tick = pace(float64(size) / rate)
				chunk = max(1, uint64(rate*tick.Seconds()))
			}
			end := min(uint64(size), offset+chunk)
			now := time.Now()
			rec := phase2Record{Image: want, Offset: end, Total: uint64(size), At: now, MGS: m.url}
			s.phase2 = &rec
			m.mu.Lock()
			m.served[spKey(s.typ, s.slot)] = rec
			m.mu.Unlock()
			s.host.attached = li
			offset = end
			served = true
			if end >= uint64(size) {
				s.host.state = HostRunning
				s.host.phase2, s.host.phase2Source = want, Phase2FromRecovery
				if d.sleds != nil {
					d.sleds.HostUp(s.sledID, s.host.bootedSlot)
				}
				s.mu.Unlock()
				return
			}
			break
		}
		if served {
			misses = 0
			s.mu.Unlock()
			if !d.sleep(tick) {
				return
			}
			continue
		}
		misses++
		wait := phase2Retry
		if s.host.attached >= 0 {
			// The attached MGS stopped answering: try the other one soon.
			s.host.attached = 1 - s.host.attached
			wait = phase2TryOther
		}
		if misses >= phase2Tries {
			s.host.state = HostPhase2Failed
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if !d.sleep(d.env.Scale(wait)) {
			return
		}
	}
}

// image returns the size of a cached recovery image and marks it used.
func (m *instance) image(sha string) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, img := range m.images {
		if img.SHA256 == sha {
			img.LastUsed = time.Now()
			return img.Size, true
		}
	}
	return 0, false
}

// addImage caches a recovery image, evicting the least recently used one.
func (m *instance) addImage(sha, artifact string, size int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, img := range m.images {
		if img.SHA256 == sha {
			img.LastUsed = time.Now()
			return
		}
	}
	if len(m.images) >= phase2CachePerMGS {
		lru := 0
		for i, img := range m.images {
			if img.LastUsed.Before(m.images[lru].LastUsed) {
				lru = i
			}
		}
		m.images = append(m.images[:lru], m.images[lru+1:]...)
	}
	m.images = append(m.images, &phase2Image{SHA256: sha, ArtifactSHA256: artifact, Size: size, LastUsed: time.Now()})
}
