package mgs

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
)

// Error codes today's MGS answers with (omicron gateway/src/error.rs,
// docs/CONFORMANCE.md §H). Every SP refusal MGS has no code of its own for (abort of
// another ID or after completion, another component busy, no valid
// caboose) reaches the client as 503 SpCommunicationFailed with the SP's
// error as text in the message: the client cannot tell it from a
// transient failure by the code.
const (
	codeInvalidSp                      = "InvalidSp"
	codeRequestUnsupportedForComponent = "RequestUnsupportedForComponent"
	codeInvalidSlotForComponent        = "InvalidSlotForComponent"
	codeImageTooLarge                  = "ImageTooLarge"
	codeUpdateInProgress               = "UpdateInProgress"
	codeUpdateFailed                   = "UpdateFailed"
	codeSpCommunicationFailed          = "SpCommunicationFailed"
	// noCode: dropshot's own 400/404/405 (a path or query parameter that
	// does not parse, a malformed body, an unknown route) carry no
	// error_code.
	noCode = ""
)

// Messages of SP refusals, as the SP's error reads in MGS's error chain.
// The caboose ones are those Nexus's precheck matches on
// (error_means_caboose_is_invalid, omicron#8014).
const (
	msgNoCaboose         = "the image does not include a caboose"
	msgOtherComponent    = "an update of another component is in progress"
	msgAbortOtherID      = "invalid update ID"
	msgAbortComplete     = "the update is already complete"
	msgSPNotAnswering    = "RPC call failed (gave up after 5 attempts)"
	commsPrefix          = "error communicating with SP: "
	commsSPErrorPrefix   = commsPrefix + "Error response from SP: "
	updateFailedSPPrefix = "updating SP failed: "
)

// spErr is an SP-side refusal as MGS answers it.
type spErr struct {
	status int
	code   string
	msg    string
}

func (e *spErr) Error() string { return e.code + ": " + e.msg }

// refused is an SP error MGS has no code for: 503 SpCommunicationFailed.
func refused(reason string) *spErr {
	return &spErr{http.StatusServiceUnavailable, codeSpCommunicationFailed, commsSPErrorPrefix + reason}
}

func (e *spErr) write(w http.ResponseWriter) { httpx.WriteError(w, e.status, e.code, e.msg) }

// readJSON decodes a request body strictly (unknown fields, trailing data
// and bodies over limit bytes are errors). A body that does not parse gets
// dropshot's 400 without an error_code.
func readJSON(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data after the JSON body")
	}
	if err != nil {
		httpx.WriteError(w, http.StatusBadRequest, noCode, "unable to parse JSON body: "+err.Error())
		return false
	}
	return true
}
