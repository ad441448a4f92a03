package nexus

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
)

// The lockstep API's answers follow omicron's: nexus/src/app/deployment.rs
// and nexus/db-queries/src/db/datastore/deployment.rs (InsertTargetError,
// blueprint_target_set_current_enabled), mapped to HTTP by
// common/src/api/external/error.rs.

// targetSet is BlueprintTargetSet.
type targetSet struct {
	TargetID *uuid.UUID `json:"target_id"`
	Enabled  *bool      `json:"enabled"`
}

func (r *rack) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /deployment/blueprints/target", r.targetView)
	mux.HandleFunc("POST /deployment/blueprints/target", r.targetSet)
	mux.HandleFunc("PUT /deployment/blueprints/target/enabled", r.targetSetEnabled)
	mux.HandleFunc("GET /deployment/blueprints/all/{id}", r.blueprintView)
	mux.HandleFunc("POST /deployment/blueprints/import", r.blueprintImport)
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		httpx.WriteError(w, http.StatusNotFound, "", "Not Found")
	})
	return mux
}

func (r *rack) targetView(w http.ResponseWriter, _ *http.Request) {
	t, _ := r.current()
	httpx.WriteJSON(w, http.StatusOK, t)
}

// targetSet makes a blueprint the target: it must exist (404
// ObjectNotFound) and be a child of the current target (400
// InvalidRequest), so history stays linear.
func (r *rack) targetSet(w http.ResponseWriter, req *http.Request) {
	ts, ok := readTargetSet(w, req)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	bp := r.blueprints[*ts.TargetID]
	if bp == nil {
		notFound(w, *ts.TargetID)
		return
	}
	if bp.ParentBlueprintID == nil || *bp.ParentBlueprintID != r.target.TargetID {
		httpx.WriteError(w, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf(
			"Blueprint %s's parent blueprint is not the current target blueprint", bp.ID))
		return
	}
	r.setTarget(Target{TargetID: bp.ID, Enabled: *ts.Enabled, TimeMadeTarget: time.Now().UTC()})
	httpx.WriteJSON(w, http.StatusOK, r.target)
}

// targetSetEnabled changes the current target's enabled flag; another
// blueprint is 400 InvalidRequest.
func (r *rack) targetSetEnabled(w http.ResponseWriter, req *http.Request) {
	ts, ok := readTargetSet(w, req)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if *ts.TargetID != r.target.TargetID {
		httpx.WriteError(w, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf(
			"Blueprint %s is not the current target blueprint", *ts.TargetID))
		return
	}
	r.setTarget(Target{TargetID: r.target.TargetID, Enabled: *ts.Enabled, TimeMadeTarget: time.Now().UTC()})
	httpx.WriteJSON(w, http.StatusOK, r.target)
}

// setTarget records a new target. Holds r.mu.
func (r *rack) setTarget(t Target) {
	r.target = t
	r.history = append(r.history, t)
}

func (r *rack) blueprintView(w http.ResponseWriter, req *http.Request) {
	id, err := uuid.Parse(req.PathValue("id"))
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "", "bad parameter in URL path: blueprint_id: "+err.Error())
		return
	}
	r.mu.Lock()
	bp := r.blueprints[id]
	r.mu.Unlock()
	if bp == nil {
		notFound(w, id)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, bp)
}

// blueprintImport stores a client's blueprint (it does not make it the
// target). A second blueprint with the same ID fails the database insert,
// which Nexus answers as an internal error.
func (r *rack) blueprintImport(w http.ResponseWriter, req *http.Request) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBlueprintBytes))
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "", "unable to read body: "+err.Error())
		return
	}
	bp, err := decodeBlueprint(raw)
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "", "unable to parse JSON body: "+err.Error())
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.blueprints[bp.ID] != nil {
		httpx.WriteError(w, http.StatusInternalServerError, "Internal", "Internal Server Error")
		return
	}
	r.blueprints[bp.ID] = bp
	w.WriteHeader(http.StatusNoContent)
}

func readTargetSet(w http.ResponseWriter, req *http.Request) (targetSet, bool) {
	var ts targetSet
	raw, err := io.ReadAll(http.MaxBytesReader(w, req.Body, 1<<16))
	if err == nil {
		err = json.Unmarshal(raw, &ts)
	}
	if err == nil && (ts.TargetID == nil || ts.Enabled == nil) {
		err = fmt.Errorf("missing field `target_id` or `enabled`")
	}
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, "", "unable to parse JSON body: "+err.Error())
		return ts, false
	}
	return ts, true
}

func notFound(w http.ResponseWriter, id uuid.UUID) {
	httpx.WriteError(w, http.StatusNotFound, "ObjectNotFound", fmt.Sprintf("not found: blueprint with id \"%s\"", id))
}
