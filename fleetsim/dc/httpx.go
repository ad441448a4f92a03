package dc

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
)

// maxBody bounds request bodies (a ServerUpdate with many agents fits).
const maxBody = 1 << 20

// restError is restify's error body, used by CNAPI, SAPI and IMGAPI.
type restError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, format string, args ...any) {
	httpx.WriteJSON(w, status, restError{Code: code, Message: fmt.Sprintf(format, args...)})
}

func notFound(w http.ResponseWriter, what string, id any) {
	writeError(w, http.StatusNotFound, triton.CodeResourceNotFound, "%s %v not found", what, id)
}

func invalid(w http.ResponseWriter, format string, args ...any) {
	writeError(w, http.StatusConflict, triton.CodeInvalidArgument, format, args...)
}

// readJSON decodes a strict, bounded JSON body; on failure it answers 400
// InvalidContent (or 413) and returns false.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data after JSON body")
	}
	if err == nil {
		return true
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		writeError(w, http.StatusRequestEntityTooLarge, "PayloadTooLarge", "body exceeds %d bytes", maxBody)
		return false
	}
	writeError(w, http.StatusBadRequest, triton.CodeInvalidContent, "bad JSON body: %v", err)
	return false
}

// pathUUID parses the {name} path value as a UUID or answers 409
// InvalidArgument (CNAPI's validation error).
func pathUUID(w http.ResponseWriter, r *http.Request, name string) (uuid.UUID, bool) {
	raw := r.PathValue(name)
	u, err := uuid.Parse(raw)
	if err != nil || len(raw) != 36 {
		invalid(w, "%s %q is not a UUID", name, raw)
		return uuid.Nil, false
	}
	return u, true
}

func queryUUID(w http.ResponseWriter, r *http.Request, name string) (uuid.UUID, bool) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return uuid.Nil, true
	}
	u, err := uuid.Parse(raw)
	if err != nil || len(raw) != 36 {
		invalid(w, "%s %q is not a UUID", name, raw)
		return uuid.Nil, false
	}
	return u, true
}

func queryBool(w http.ResponseWriter, r *http.Request, name string) (*bool, bool) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return nil, true
	}
	b, err := strconv.ParseBool(raw)
	if err != nil {
		invalid(w, "%s must be true or false, got %q", name, raw)
		return nil, false
	}
	return &b, true
}

func queryInt(w http.ResponseWriter, r *http.Request, name string, def, lo, hi int) (int, bool) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, true
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		invalid(w, "%s must be an integer within %d..%d, got %q", name, lo, hi, raw)
		return 0, false
	}
	return n, true
}

// notFoundMux wraps an API mux so unknown routes get a JSON 404.
func withFallback(mux *http.ServeMux, api string) *http.ServeMux {
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, triton.CodeResourceNotFound, "%s: no route for %s %s", api, r.Method, r.URL.Path)
	})
	return mux
}

var writeJSON = httpx.WriteJSON
