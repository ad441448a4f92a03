// Package httpx holds fleetsim's small HTTP helpers: JSON replies, bounded
// strict JSON decoding, and Dropshot-style error bodies (the shape MGS and
// sled-agent use: {request_id, error_code, message}).
package httpx

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
)

var requestSeq atomic.Uint64

// ErrorBody is the Dropshot error shape.
type ErrorBody struct {
	RequestID string `json:"request_id"`
	ErrorCode string `json:"error_code,omitempty"`
	Message   string `json:"message"`
}

// WriteJSON writes v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError writes a Dropshot-style error body.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	WriteJSON(w, status, ErrorBody{
		RequestID: strconv.FormatUint(requestSeq.Add(1), 10),
		ErrorCode: code,
		Message:   msg,
	})
}

// ReadJSON decodes the request body into v, rejecting unknown fields, bodies
// over limit bytes and trailing data. On failure it writes a 400 (or 413) and
// returns false.
func ReadJSON(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	body := http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data after JSON body")
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			WriteError(w, http.StatusRequestEntityTooLarge, "PayloadTooLarge", fmt.Sprintf("body exceeds %d bytes", limit))
			return false
		}
		WriteError(w, http.StatusBadRequest, "InvalidRequest", "bad JSON body: "+err.Error())
		return false
	}
	return true
}
