package mgs

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/fleetsaga/fleetsaga/fleet/apiversion"
)

// Error is a failed MGS call: a transport failure (Status 0), an HTTP error
// reply (Status, Code from the Dropshot body's error_code, or the reset
// endpoint's `state` tag in ResetState), or a reply that did not decode.
type Error struct {
	Op  string // e.g. "update-status sled/3 sp"
	MGS string // base URL of the instance
	// Status is the HTTP status; 0 for transport and context errors.
	Status    int
	Code      string
	Message   string
	RequestID string
	// ResetState is the SpComponentResetError tag of a reset error
	// ("reset_sp_of_local_sled" or "other").
	ResetState string
	// Decode is set when a reply had the wrong shape.
	Decode bool
	// Err is the transport or decoding cause.
	Err error
}

func (e *Error) Error() string {
	switch {
	case apiversion.IsRefused(e.Err):
		return fmt.Sprintf("mgs %s: %v", e.Op, e.Err)
	case e.Decode:
		return fmt.Sprintf("mgs %s %s: malformed reply (HTTP %d): %v", e.MGS, e.Op, e.Status, e.Err)
	case e.Status == 0:
		return fmt.Sprintf("mgs %s %s: %v", e.MGS, e.Op, e.Err)
	default:
		code := e.Code
		if code == "" {
			code = e.ResetState
		}
		return fmt.Sprintf("mgs %s %s: HTTP %d %s: %s", e.MGS, e.Op, e.Status, code, e.Message)
	}
}

func (e *Error) Unwrap() error { return e.Err }

// Error codes of today's MGS (omicron gateway/src/error.rs; docs/CONFORMANCE.md §H).
// Every other SP refusal (abort of another ID or after completion, another
// component busy, no valid caboose) is 503 SpCommunicationFailed, which a
// client cannot tell from a transient failure by the code: after such an
// ambiguous answer it re-reads the SP's state (see decide.go).
const (
	CodeInvalidSp                      = "InvalidSp"
	CodeRequestUnsupportedForComponent = "RequestUnsupportedForComponent"
	CodeInvalidSlotForComponent        = "InvalidSlotForComponent"
	CodeImageTooLarge                  = "ImageTooLarge"
	CodeUpdateInProgress               = "UpdateInProgress"
	CodeUpdateSlotBusy                 = "UpdateSlotBusy"
	CodeUpdateFailed                   = "UpdateFailed"
	CodeSpCommunicationFailed          = "SpCommunicationFailed"
	CodeResetSpOfLocalSled             = "ResetSpOfLocalSled"

	resetStateLocalSled = "reset_sp_of_local_sled"
)

// Class says what a caller should do about an error.
type Class int

const (
	// ClassNone: no error.
	ClassNone Class = iota
	// ClassTryNextMGS: this instance could not do it (unreachable, down,
	// could not reach the SP, refuses to reset its own sled's SP); another
	// instance may. When every instance fails this way, retry later — but
	// an Ambiguous answer may also be the SP refusing for good: re-read
	// the SP's state before retrying (decide.go).
	ClassTryNextMGS
	// ClassBusy: the SP is busy with an update (503 UpdateInProgress and
	// friends). Asking another MGS gives the same answer; watch the SP.
	ClassBusy
	// ClassFatal: the request itself is wrong or the SP refused it for
	// good (4xx), or the reply is malformed. Retrying does not help.
	ClassFatal
	// ClassCanceled: the caller's context ended.
	ClassCanceled
)

func (c Class) String() string {
	switch c {
	case ClassNone:
		return "none"
	case ClassTryNextMGS:
		return "try-next-mgs"
	case ClassBusy:
		return "busy"
	case ClassFatal:
		return "fatal"
	case ClassCanceled:
		return "canceled"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Classify is the one place that decides how an MGS error is handled.
func Classify(err error) Class {
	if err == nil {
		return ClassNone
	}
	if errors.Is(err, context.Canceled) {
		return ClassCanceled
	}
	var e *Error
	if !errors.As(err, &e) {
		if errors.Is(err, context.DeadlineExceeded) {
			return ClassTryNextMGS
		}
		return ClassFatal
	}
	switch {
	case e.Decode, apiversion.IsRefused(e.Err):
		// A refused API version: the rack runs an older MGS; asking
		// again, or the other instance of the same rack, does not help.
		return ClassFatal
	case e.Status == 0:
		return ClassTryNextMGS // transport: connection refused/reset, timeout
	case e.ResetState == resetStateLocalSled || e.Code == CodeResetSpOfLocalSled:
		return ClassTryNextMGS
	case e.Status == http.StatusServiceUnavailable && (e.Code == CodeUpdateInProgress || e.Code == CodeUpdateSlotBusy):
		return ClassBusy
	case e.Status >= 500, e.Status == http.StatusTooManyRequests, e.Status == http.StatusRequestTimeout:
		return ClassTryNextMGS
	default:
		return ClassFatal
	}
}

// HasCode reports whether err is an MGS error reply with error_code code.
func HasCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && (e.Code == code || (code == CodeResetSpOfLocalSled && e.ResetState == resetStateLocalSled))
}

// StatusOf returns the HTTP status of an MGS error (0 if none).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}
