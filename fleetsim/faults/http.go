package faults

import (
	"net/http"
	"strconv"
	"time"

	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
)

// Mount serves the fault endpoint: GET/POST/DELETE /faults, DELETE
// /faults/{id}, and GET /faults/fired (every fault that fired, spent ones
// included).
func (r *Registry) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /faults", func(w http.ResponseWriter, _ *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, r.List())
	})
	mux.HandleFunc("GET /faults/fired", func(w http.ResponseWriter, _ *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, r.Fired())
	})
	mux.HandleFunc("POST /faults", func(w http.ResponseWriter, req *http.Request) {
		var f Fault
		if !httpx.ReadJSON(w, req, &f, 1<<16) {
			return
		}
		id, err := r.Arm(f)
		if err != nil {
			httpx.WriteError(w, http.StatusBadRequest, "InvalidFault", err.Error())
			return
		}
		httpx.WriteJSON(w, http.StatusCreated, map[string]int{"id": id})
	})
	mux.HandleFunc("DELETE /faults", func(w http.ResponseWriter, _ *http.Request) {
		r.Clear(0)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /faults/{id}", func(w http.ResponseWriter, req *http.Request) {
		id, err := strconv.Atoi(req.PathValue("id"))
		if err != nil || id <= 0 {
			httpx.WriteError(w, http.StatusBadRequest, "InvalidRequest", "fault id must be a positive integer")
			return
		}
		if !r.Clear(id) {
			httpx.WriteError(w, http.StatusNotFound, "NotFound", "no armed fault with id "+req.PathValue("id"))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// Middleware applies the API-level faults (latency, error_rate) for the API
// named api (target "api/<name>").
func (r *Registry) Middleware(api string, next http.Handler) http.Handler {
	target := "api/" + api
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if f, ok := r.Peek(Latency, target); ok {
			r.Fire(Latency, target)
			select {
			case <-time.After(f.LatencyDuration()):
			case <-req.Context().Done():
				return
			}
		}
		if r.Chance(ErrorRate, target) {
			httpx.WriteError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "injected fault: error_rate on "+target)
			return
		}
		next.ServeHTTP(w, req)
	})
}
