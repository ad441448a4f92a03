package mgs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
)

// Mount serves every MGS instance under /mgs/{i}/ and the truth under
// /truth/mgs.
func (d *Domain) Mount(mux *http.ServeMux) {
	handlers := map[string]http.Handler{}
	for _, r := range d.racks {
		for _, m := range r.mgs {
			prefix := "/mgs/" + strconv.Itoa(m.url)
			h := d.env.Faults.Middleware("mgs/"+strconv.Itoa(m.url), http.StripPrefix(prefix, httpx.RequireAPIVersion(APIVersion, m.routes())))
			handlers[strconv.Itoa(m.url)] = d.env.Wrap("mgs", prefix, m.downCheck(h))
		}
	}
	mux.HandleFunc("/mgs/", func(w http.ResponseWriter, r *http.Request) {
		rest := strings.TrimPrefix(r.URL.Path, "/mgs/")
		idx, _, _ := strings.Cut(rest, "/")
		h, ok := handlers[idx]
		if !ok {
			httpx.WriteError(w, http.StatusNotFound, noCode, fmt.Sprintf("no MGS instance %q (have %d)", idx, len(handlers)))
			return
		}
		h.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /truth/mgs", func(w http.ResponseWriter, _ *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, d.Truth())
	})
	mux.HandleFunc("GET /truth/mgs/sp/{type}/{slot}", func(w http.ResponseWriter, r *http.Request) {
		ri := 0
		if q := r.URL.Query().Get("rack"); q != "" {
			v, err := strconv.Atoi(q)
			if err != nil || v < 0 || v >= len(d.racks) {
				httpx.WriteError(w, http.StatusBadRequest, noCode, "rack must be a rack index")
				return
			}
			ri = v
		}
		slot, err := strconv.Atoi(r.PathValue("slot"))
		if err != nil || len(d.racks) == 0 {
			httpx.WriteError(w, http.StatusBadRequest, noCode, "bad SP slot")
			return
		}
		s := d.racks[ri].sps[spKey(r.PathValue("type"), slot)]
		if s == nil {
			httpx.WriteError(w, http.StatusNotFound, codeInvalidSp, "no such SP")
			return
		}
		httpx.WriteJSON(w, http.StatusOK, s.truth(time.Now()))
	})
}

// downCheck answers 503 for every request while mgs_down is armed for m.
// Each refused request consumes one firing (Fault.Times).
func (m *instance) downCheck(next http.Handler) http.Handler {
	target := "mgs/" + strconv.Itoa(m.url)
	reg := m.rack.d.env.Faults
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, down := reg.Fire(faults.MGSDown, target); down {
			httpx.WriteError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "injected fault: "+target+" is down")
			return
		}
		next.ServeHTTP(w, r)
	})
}

type methods map[string]http.HandlerFunc

// on dispatches by method and answers 405 in JSON for the others.
func on(ms methods) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h, ok := ms[r.Method]; ok {
			h(w, r)
			return
		}
		allowed := make([]string, 0, len(ms))
		for m := range ms {
			allowed = append(allowed, m)
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		httpx.WriteError(w, http.StatusMethodNotAllowed, noCode, r.Method+" is not allowed on "+r.URL.Path)
	}
}

func (m *instance) routes() http.Handler {
	mux := http.NewServeMux()
	comp := "/sp/{type}/{slot}/component/{component}"
	mux.HandleFunc("/sp/{type}/{slot}", on(methods{"GET": m.spGet}))
	mux.HandleFunc("/sp/{type}/{slot}/power-state", on(methods{"GET": m.powerGet, "POST": m.powerSet}))
	mux.HandleFunc("/sp/{type}/{slot}/startup-options", on(methods{"GET": m.startupGet, "POST": m.startupSet}))
	mux.HandleFunc("/sp/{type}/{slot}/host-phase2-progress", on(methods{"GET": m.phase2Get, "DELETE": m.phase2Delete}))
	mux.HandleFunc(comp+"/caboose", on(methods{"GET": m.caboose}))
	mux.HandleFunc(comp+"/active-slot", on(methods{"GET": m.activeSlotGet, "POST": m.activeSlotSet}))
	mux.HandleFunc(comp+"/update", on(methods{"POST": m.updateStart}))
	mux.HandleFunc(comp+"/update-status", on(methods{"GET": m.updateStatus}))
	mux.HandleFunc(comp+"/update-abort", on(methods{"POST": m.updateAbort}))
	mux.HandleFunc(comp+"/reset", on(methods{"POST": m.reset}))
	mux.HandleFunc(comp+"/hash/{firmware_slot}", on(methods{"GET": m.hashGet, "POST": m.hashStart}))
	mux.HandleFunc("/recovery/host-phase2", on(methods{"POST": m.phase2Upload}))
	mux.HandleFunc("/local/all-sp-ids", on(methods{"GET": m.allSPIDs}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteError(w, http.StatusNotFound, noCode, "no MGS route for "+r.Method+" "+r.URL.Path)
	})
	return mux
}

// errWriter writes an error in the endpoint's error shape.
type errWriter func(w http.ResponseWriter, status int, code, msg string)

// resetError writes SpComponentResetError's `other` variant (the reset
// endpoint's error shape), with the Dropshot fields beside it.
func resetError(w http.ResponseWriter, status int, code, msg string) {
	httpx.WriteJSON(w, status, map[string]any{
		"state": "other", "error_code": code, "message": msg, "request_id": strconv.FormatInt(time.Now().UnixNano(), 36),
	})
}

// lookup resolves the SP of the request path.
func (m *instance) lookup(w http.ResponseWriter, r *http.Request, werr errWriter) (*sp, bool) {
	typ := r.PathValue("type")
	switch typ {
	case "sled", "switch", "power":
	default:
		werr(w, http.StatusBadRequest, noCode, fmt.Sprintf("unknown SP type %q (sled, switch, power)", typ))
		return nil, false
	}
	slot, err := strconv.ParseUint(r.PathValue("slot"), 10, 16)
	if err != nil {
		werr(w, http.StatusBadRequest, noCode, fmt.Sprintf("SP slot %q is not a uint16", r.PathValue("slot")))
		return nil, false
	}
	s := m.rack.sps[spKey(typ, int(slot))]
	if s == nil {
		werr(w, http.StatusBadRequest, codeInvalidSp, fmt.Sprintf("nonexistent SP %s %d", typ, slot))
		return nil, false
	}
	return s, true
}

// component validates the component path parameter; only sp and
// host-boot-flash are simulated.
func component(w http.ResponseWriter, r *http.Request, werr errWriter) (string, bool) {
	c := r.PathValue("component")
	if c == "" || len(c) > maxCompName {
		werr(w, http.StatusBadRequest, noCode, fmt.Sprintf("component name %q must be 1..16 bytes", c))
		return "", false
	}
	if c != CompSP && c != CompHost {
		werr(w, http.StatusBadRequest, codeRequestUnsupportedForComponent, fmt.Sprintf("component %q is not supported here (sp, host-boot-flash)", c))
		return "", false
	}
	return c, true
}

// firmwareSlot parses a firmware slot and checks it is valid for component.
func firmwareSlot(w http.ResponseWriter, raw, comp string, werr errWriter) (int, bool) {
	if raw == "" {
		werr(w, http.StatusBadRequest, noCode, "firmware_slot is required")
		return 0, false
	}
	v, err := strconv.ParseUint(raw, 10, 16)
	if err != nil {
		werr(w, http.StatusBadRequest, noCode, fmt.Sprintf("firmware_slot %q is not a uint16", raw))
		return 0, false
	}
	return int(v), true
}

// live locks s and checks that the SP answers (it does not while it reboots).
// On success the caller must unlock s.mu.
func live(w http.ResponseWriter, s *sp, werr errWriter) (time.Time, bool) {
	s.mu.Lock()
	now := time.Now()
	if now.Before(s.downUntil) {
		s.mu.Unlock()
		werr(w, http.StatusServiceUnavailable, codeSpCommunicationFailed, commsPrefix+msgSPNotAnswering)
		return now, false
	}
	return now, true
}

func (m *instance) spGet(w http.ResponseWriter, r *http.Request) {
	s, ok := m.lookup(w, r, httpx.WriteError)
	if !ok {
		return
	}
	if _, ok := live(w, s, httpx.WriteError); !ok {
		return
	}
	defer s.mu.Unlock()
	mac := make([]int, 6)
	mac[0], mac[1], mac[2] = 0xa8, 0x40, 0x25
	mac[3], mac[4], mac[5] = m.rack.index&0xff, (s.slot>>8)&0xff, s.slot&0xff
	archive := s.spSlots[0].SHA256
	if len(archive) > 16 {
		archive = archive[:16]
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{
		"serial_number":     s.serial,
		"model":             s.model,
		"revision":          0,
		"hubris_archive_id": archive,
		"base_mac_address":  mac,
		"power_state":       s.powerState(),
		"rot": map[string]any{
			"state":                              "v2",
			"active":                             map[string]string{"slot": "a"},
			"persistent_boot_preference":         map[string]string{"slot": "a"},
			"pending_persistent_boot_preference": nil,
			"transient_boot_preference":          nil,
			"slot_a_sha3_256_digest":             nil,
			"slot_b_sha3_256_digest":             nil,
		},
	})
}

func (s *sp) powerState() string {
	if s.host.state == HostOff {
		return "A2"
	}
	return "A0"
}

func (m *instance) powerGet(w http.ResponseWriter, r *http.Request) {
	s, ok := m.lookup(w, r, httpx.WriteError)
	if !ok {
		return
	}
	if _, ok := live(w, s, httpx.WriteError); !ok {
		return
	}
	defer s.mu.Unlock()
	httpx.WriteJSON(w, http.StatusOK, s.powerState())
}

// powerSet: A2 powers the host off; A0 powers it on (it boots from the
// active boot flash slot). The host phase 1 update uses A2 then A0.
func (m *instance) powerSet(w http.ResponseWriter, r *http.Request) {
	s, ok := m.lookup(w, r, httpx.WriteError)
	if !ok {
		return
	}
	var state string
	if !readJSON(w, r, &state, 1<<10) {
		return
	}
	switch state {
	case "A0", "A1", "A2":
	default:
		httpx.WriteError(w, http.StatusBadRequest, noCode, fmt.Sprintf("power state %q is not A0, A1 or A2", state))
		return
	}
	now, ok := live(w, s, httpx.WriteError)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	switch {
	case state != "A0" && s.host.state != HostOff:
		s.host.epoch++
		s.host.state = HostOff
		s.host.attached = -1
		m.rack.d.hostDown(s)
	case state == "A0" && s.host.state == HostOff:
		m.rack.d.bootHost(s, now, now)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (m *instance) caboose(w http.ResponseWriter, r *http.Request) {
	s, ok := m.lookup(w, r, httpx.WriteError)
	if !ok {
		return
	}
	comp, ok := component(w, r, httpx.WriteError)
	if !ok {
		return
	}
	fw, ok := firmwareSlot(w, r.URL.Query().Get("firmware_slot"), comp, httpx.WriteError)
	if !ok {
		return
	}
	if comp == CompHost {
		// Host boot flash holds no caboose: its version is known from the
		// slot's hash.
		httpx.WriteError(w, http.StatusBadRequest, codeRequestUnsupportedForComponent,
			"error communicating with SP: Error response from SP: request is not supported for component host-boot-flash")
		return
	}
	if fw > 1 {
		httpx.WriteError(w, http.StatusBadRequest, codeInvalidSlotForComponent, fmt.Sprintf("component %s has no firmware slot %d", comp, fw))
		return
	}
	if _, ok := live(w, s, httpx.WriteError); !ok {
		return
	}
	img := s.spSlots[fw]
	s.mu.Unlock()
	if !img.Valid || img.Version == "" {
		refused(msgNoCaboose).write(w)
		return
	}
	commit := img.SHA256
	if len(commit) > 40 {
		commit = commit[:40]
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{
		"board": img.Board, "git_commit": commit, "name": img.Name, "version": img.Version, "sign": nil, "epoch": nil,
	})
}

func (m *instance) activeSlotGet(w http.ResponseWriter, r *http.Request) {
	s, ok := m.lookup(w, r, httpx.WriteError)
	if !ok {
		return
	}
	comp, ok := component(w, r, httpx.WriteError)
	if !ok {
		return
	}
	if _, ok := live(w, s, httpx.WriteError); !ok {
		return
	}
	defer s.mu.Unlock()
	slot := 0 // the SP's running bank is always reported as slot 0
	if comp == CompHost {
		slot = s.hostActive()
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]int{"slot": slot})
}

func (m *instance) activeSlotSet(w http.ResponseWriter, r *http.Request) {
	s, ok := m.lookup(w, r, httpx.WriteError)
	if !ok {
		return
	}
	comp, ok := component(w, r, httpx.WriteError)
	if !ok {
		return
	}
	persist, err := strconv.ParseBool(r.URL.Query().Get("persist"))
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, noCode, "persist is required and must be true or false")
		return
	}
	var body struct {
		Slot *int `json:"slot"`
	}
	if !readJSON(w, r, &body, 1<<10) {
		return
	}
	if body.Slot == nil {
		httpx.WriteError(w, http.StatusBadRequest, noCode, "slot is required")
		return
	}
	if comp != CompHost {
		httpx.WriteError(w, http.StatusBadRequest, codeRequestUnsupportedForComponent, "the active slot of "+comp+" cannot be set")
		return
	}
	if *body.Slot != 0 && *body.Slot != 1 {
		httpx.WriteError(w, http.StatusBadRequest, codeInvalidSlotForComponent, fmt.Sprintf("host boot flash has slots 0 and 1, not %d", *body.Slot))
		return
	}
	if _, ok := live(w, s, httpx.WriteError); !ok {
		return
	}
	defer s.mu.Unlock()
	if persist {
		s.host.persistent, s.host.transient = *body.Slot, -1
	} else {
		s.host.transient = *body.Slot
	}
	w.WriteHeader(http.StatusNoContent)
}

// updateStart receives the whole image (hashing it as it streams, keeping
// only digest and length), then asks the SP to prepare. On the SP's ack it
// answers 204 and delivers the image in the background.
func (m *instance) updateStart(w http.ResponseWriter, r *http.Request) {
	s, ok := m.lookup(w, r, httpx.WriteError)
	if !ok {
		return
	}
	comp, ok := component(w, r, httpx.WriteError)
	if !ok {
		return
	}
	q := r.URL.Query()
	id, err := uuid.Parse(q.Get("id"))
	if err != nil || len(q.Get("id")) != 36 {
		httpx.WriteError(w, http.StatusBadRequest, noCode, fmt.Sprintf("id %q is not a UUID", q.Get("id")))
		return
	}
	fw, ok := firmwareSlot(w, q.Get("firmware_slot"), comp, httpx.WriteError)
	if !ok {
		return
	}
	if (comp == CompSP && fw != 0) || (comp == CompHost && fw > 1) {
		httpx.WriteError(w, http.StatusBadRequest, codeInvalidSlotForComponent,
			fmt.Sprintf("component %s cannot be updated in firmware slot %d", comp, fw))
		return
	}
	if r.ContentLength > maxUpdateBody {
		httpx.WriteError(w, http.StatusBadRequest, codeImageTooLarge, fmt.Sprintf("image exceeds %d bytes", maxUpdateBody))
		return
	}
	ir := newImageReader(http.MaxBytesReader(w, r.Body, maxUpdateBody))
	if _, err := io.Copy(io.Discard, ir); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			httpx.WriteError(w, http.StatusBadRequest, codeImageTooLarge, fmt.Sprintf("image exceeds %d bytes", maxUpdateBody))
			return
		}
		httpx.WriteError(w, http.StatusBadRequest, noCode, "reading image: "+err.Error())
		return
	}
	info := ir.info()
	if info.Size == 0 {
		httpx.WriteError(w, http.StatusServiceUnavailable, codeUpdateFailed, updateFailedSPPrefix+"update image cannot be empty")
		return
	}
	if comp == CompSP && info.Header == nil {
		httpx.WriteError(w, http.StatusServiceUnavailable, codeUpdateFailed, updateFailedSPPrefix+"hubris archive error: "+ir.hdrErr.Error())
		return
	}
	if h := info.Header; h != nil && h.Component != "" && h.Component != comp {
		httpx.WriteError(w, http.StatusServiceUnavailable, codeUpdateFailed, updateFailedSPPrefix+fmt.Sprintf("the image is for component %q, not %q", h.Component, comp))
		return
	}
	now, ok := live(w, s, httpx.WriteError)
	if !ok {
		return
	}
	d := m.rack.d
	if f, fired := d.env.Faults.Fire(faults.ForeignUpdate, s.target()); fired {
		d.startForeign(s, now, f, comp, fw, info, m)
	}
	u, serr := s.prepare(now, id, comp, fw, info, m.url, false)
	if serr != nil {
		s.mu.Unlock()
		serr.write(w)
		return
	}
	s.mu.Unlock()
	d.goBackground(func() { d.deliver(s, u, m) })
	w.WriteHeader(http.StatusNoContent)
}

func (m *instance) updateStatus(w http.ResponseWriter, r *http.Request) {
	s, ok := m.lookup(w, r, httpx.WriteError)
	if !ok {
		return
	}
	comp, ok := component(w, r, httpx.WriteError)
	if !ok {
		return
	}
	now, ok := live(w, s, httpx.WriteError)
	if !ok {
		return
	}
	st := s.status(now, comp)
	s.mu.Unlock()
	httpx.WriteJSON(w, http.StatusOK, st)
}

func (m *instance) updateAbort(w http.ResponseWriter, r *http.Request) {
	s, ok := m.lookup(w, r, httpx.WriteError)
	if !ok {
		return
	}
	comp, ok := component(w, r, httpx.WriteError)
	if !ok {
		return
	}
	var body struct {
		ID *string `json:"id"`
	}
	if !readJSON(w, r, &body, 1<<10) {
		return
	}
	if body.ID == nil {
		httpx.WriteError(w, http.StatusBadRequest, noCode, "id is required")
		return
	}
	id, err := uuid.Parse(*body.ID)
	if err != nil || len(*body.ID) != 36 {
		httpx.WriteError(w, http.StatusBadRequest, noCode, fmt.Sprintf("id %q is not a UUID", *body.ID))
		return
	}
	now, ok := live(w, s, httpx.WriteError)
	if !ok {
		return
	}
	serr := s.abort(now, comp, id)
	s.mu.Unlock()
	if serr != nil {
		serr.write(w)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// reset resets the SP. MGS prepares the reset, triggers it and waits for
// the SP to come back to disarm its watchdog; only then does it answer. An
// MGS refuses to reset the SP of the sled it runs on.
func (m *instance) reset(w http.ResponseWriter, r *http.Request) {
	s, ok := m.lookup(w, r, resetError)
	if !ok {
		return
	}
	comp, ok := component(w, r, resetError)
	if !ok {
		return
	}
	if comp != CompSP {
		resetError(w, http.StatusBadRequest, codeRequestUnsupportedForComponent, "only the sp component can be reset here")
		return
	}
	if s.typ == "sled" && s.slot == m.rack.spec.MGSSleds[m.local] {
		// SpComponentResetError::ResetSpOfLocalSled is the bare tag.
		httpx.WriteJSON(w, http.StatusBadRequest, map[string]any{"state": "reset_sp_of_local_sled"})
		return
	}
	now, ok := live(w, s, resetError)
	if !ok {
		return
	}
	swapped := s.updates[CompSP] != nil && s.updates[CompSP].state == StateComplete
	s.reset(now, fmt.Sprintf("reset via mgs/%d", m.url))
	epoch, back := s.epoch, s.downUntil
	s.mu.Unlock()

	d := m.rack.d
	if !d.sleep(time.Until(back)) {
		resetError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "simulator is shutting down")
		return
	}
	if d.mgsDown(m.url) {
		// MGS was gone when the SP came back: nobody disarmed the watchdog,
		// so the SP boots its previous image again.
		s.mu.Lock()
		if swapped && s.epoch == epoch {
			s.rollback(time.Now())
		}
		s.mu.Unlock()
		// A dead MGS answers nothing: the caller cannot tell whether
		// the reset happened.
		loseReply(w)
		return
	}
	if _, lost := d.env.Faults.Fire(faults.ResetReplyLost, fmt.Sprintf("sp/%s/%d", s.typ, s.slot)); lost {
		loseReply(w)
		return
	}
	if _, failed := d.env.Faults.Fire(faults.ResetErrorAfterReset, fmt.Sprintf("sp/%s/%d", s.typ, s.slot)); failed {
		resetError(w, http.StatusServiceUnavailable, codeSpCommunicationFailed, commsPrefix+"the SP reset, but its answer to the watchdog disarm was lost (injected reset_error_after_reset)")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// loseReply closes the connection without an HTTP response.
func loseReply(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func (m *instance) hashSlot(w http.ResponseWriter, r *http.Request) (*sp, int, bool) {
	s, ok := m.lookup(w, r, httpx.WriteError)
	if !ok {
		return nil, 0, false
	}
	comp, ok := component(w, r, httpx.WriteError)
	if !ok {
		return nil, 0, false
	}
	if comp != CompHost {
		httpx.WriteError(w, http.StatusBadRequest, codeRequestUnsupportedForComponent, "slot hashing is only valid for host-boot-flash")
		return nil, 0, false
	}
	fw, ok := firmwareSlot(w, r.PathValue("firmware_slot"), comp, httpx.WriteError)
	if !ok {
		return nil, 0, false
	}
	if fw > 1 {
		httpx.WriteError(w, http.StatusBadRequest, codeInvalidSlotForComponent, fmt.Sprintf("host boot flash has no slot %d", fw))
		return nil, 0, false
	}
	return s, fw, true
}

func (m *instance) hashGet(w http.ResponseWriter, r *http.Request) {
	s, fw, ok := m.hashSlot(w, r)
	if !ok {
		return
	}
	now, ok := live(w, s, httpx.WriteError)
	if !ok {
		return
	}
	ready, img := s.host.hashReady[fw], s.host.slots[fw]
	s.mu.Unlock()
	switch {
	case ready.IsZero():
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "hash_not_calculated"})
	case now.Before(ready):
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "hash_in_progress"})
	default:
		sum := img.SHA256
		if !img.Valid {
			sum = SHA256Hex([]byte("fleetsim-erased-slot"))
		}
		raw, _ := hex.DecodeString(sum)
		ints := make([]int, len(raw))
		for i, b := range raw {
			ints[i] = int(b)
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"status": "hashed", "sha256": ints})
	}
}

func (m *instance) hashStart(w http.ResponseWriter, r *http.Request) {
	s, fw, ok := m.hashSlot(w, r)
	if !ok {
		return
	}
	now, ok := live(w, s, httpx.WriteError)
	if !ok {
		return
	}
	if s.host.hashReady[fw].IsZero() {
		s.host.hashReady[fw] = now.Add(m.rack.d.env.Scale(hashTime))
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// phase2Get answers host-phase2-progress. Today's MGS (the default)
// answers only with the last request it served itself, so the MGS the SP
// did not attach to answers none. In the opt-in SPPhase2Record mode every
// MGS answers with the SP's own record, whichever MGS served the fetch.
func (m *instance) phase2Get(w http.ResponseWriter, r *http.Request) {
	s, ok := m.lookup(w, r, httpx.WriteError)
	if !ok {
		return
	}
	var rec *phase2Record
	if m.rack.spec.SPPhase2Record {
		if _, ok := live(w, s, httpx.WriteError); !ok {
			return
		}
		if s.phase2 != nil {
			c := *s.phase2
			rec = &c
		}
		s.mu.Unlock()
	} else {
		m.mu.Lock()
		if c, ok := m.served[spKey(s.typ, s.slot)]; ok {
			rec = &c
		}
		m.mu.Unlock()
	}
	httpx.WriteJSON(w, http.StatusOK, phase2Progress(rec, time.Now()))
}

func phase2Progress(rec *phase2Record, now time.Time) map[string]any {
	if rec == nil {
		return map[string]any{"progress": "none"}
	}
	age := now.Sub(rec.At)
	if age < 0 {
		age = 0
	}
	return map[string]any{
		"progress":   "available",
		"image_id":   map[string]string{"sha256_hash": rec.Image},
		"offset":     rec.Offset,
		"total_size": rec.Total,
		"age":        map[string]int64{"secs": int64(age / time.Second), "nanos": int64(age % time.Second)},
	}
}

func (m *instance) phase2Delete(w http.ResponseWriter, r *http.Request) {
	s, ok := m.lookup(w, r, httpx.WriteError)
	if !ok {
		return
	}
	if m.rack.spec.SPPhase2Record {
		if _, ok := live(w, s, httpx.WriteError); !ok {
			return
		}
		s.phase2 = nil
		s.mu.Unlock()
	}
	// Today's MGS forgets only its own record.
	m.mu.Lock()
	delete(m.served, spKey(s.typ, s.slot))
	m.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// phase2Upload is MGS's recovery upload (omicron gateway/src/http_entrypoints.rs
// recovery_host_phase2_upload; mgs gateway-sp-comms/src/host_phase2.rs
// InMemoryHostPhase2Provider::insert): a body over 512 MiB gets dropshot's
// 400; the body must be a host phase 2 image, its header's magic, version
// and length checked, else 400 BadHostPhase2Image with MGS's message. MGS
// names the image by its header's SHA-256 and keeps the last one
// (fleetsim keeps the digests and the size, never the body).
func (m *instance) phase2Upload(w http.ResponseWriter, r *http.Request) {
	tooBig := func() {
		httpx.WriteError(w, http.StatusBadRequest, noCode, fmt.Sprintf("request body exceeded maximum size of %d bytes", int64(maxPhase2Body)))
	}
	if r.ContentLength > maxPhase2Body {
		tooBig()
		return
	}
	body := http.MaxBytesReader(w, r.Body, maxPhase2Body)
	head := make([]byte, fmgs.Phase2HeaderSize)
	n, err := io.ReadFull(body, head)
	sum := sha256.New()
	sum.Write(head[:n])
	var rest int64
	if err == nil {
		rest, err = io.Copy(sum, body)
	} else if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			tooBig()
			return
		}
		httpx.WriteError(w, http.StatusBadRequest, noCode, "error streaming request body: "+err.Error())
		return
	}
	size := int64(n) + rest
	h, err := fmgs.ParsePhase2Header(head[:n])
	if err == nil {
		err = h.CheckPhase2Size(uint64(size))
	}
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, fmgs.CodeBadHostPhase2Image, err.Error())
		return
	}
	m.addImage(h.SHA256, hex.EncodeToString(sum.Sum(nil)), size)
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"sha256_hash": h.SHA256})
}

func (m *instance) allSPIDs(w http.ResponseWriter, _ *http.Request) {
	out := make([]map[string]any, 0, len(m.rack.order))
	for _, s := range m.rack.order {
		out = append(out, map[string]any{"type": s.typ, "slot": s.slot})
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}
