package mgs

import (
	"encoding/json"
	"fmt"
	"net/http"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
)

// StartupOptions is MGS's HostStartupOptions (the client's type, which
// follows the document): the flags the host reads from its SP when it boots.
// Phase2RecoveryMode makes the host fetch phase 2 through the SP (the
// recovery path); without it the host boots the phase 2 on its disk.
type StartupOptions = fmgs.HostStartupOptions

// startupFields are HostStartupOptions' fields, all required.
var startupFields = []string{"boot_net", "boot_ramdisk", "bootrd", "kbm", "kmdb", "kmdb_boot", "phase2_recovery_mode", "prom", "verbose"}

func (m *instance) startupGet(w http.ResponseWriter, r *http.Request) {
	s, ok := m.lookup(w, r, httpx.WriteError)
	if !ok {
		return
	}
	if _, ok := live(w, s, httpx.WriteError); !ok {
		return
	}
	opts := s.host.startup
	s.mu.Unlock()
	httpx.WriteJSON(w, http.StatusOK, opts)
}

// startupSet replaces the whole HostStartupOptions object; the host reads
// it at its next boot.
func (m *instance) startupSet(w http.ResponseWriter, r *http.Request) {
	s, ok := m.lookup(w, r, httpx.WriteError)
	if !ok {
		return
	}
	var raw map[string]json.RawMessage
	if !readJSON(w, r, &raw, 1<<10) {
		return
	}
	for _, f := range startupFields {
		if _, ok := raw[f]; !ok {
			httpx.WriteError(w, http.StatusBadRequest, noCode, fmt.Sprintf("unable to parse JSON body: missing field `%s`", f))
			return
		}
	}
	if len(raw) != len(startupFields) {
		httpx.WriteError(w, http.StatusBadRequest, noCode, "unable to parse JSON body: unknown field")
		return
	}
	b, _ := json.Marshal(raw)
	var opts StartupOptions
	if err := json.Unmarshal(b, &opts); err != nil {
		httpx.WriteError(w, http.StatusBadRequest, noCode, "unable to parse JSON body: "+err.Error())
		return
	}
	if _, ok := live(w, s, httpx.WriteError); !ok {
		return
	}
	s.host.startup = opts
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
