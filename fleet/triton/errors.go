package triton

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// Error codes the Triton APIs (and fleetsim) answer with. Real CNAPI, SAPI
// and IMGAPI use restify's error body {code, message}.
const (
	CodeResourceNotFound = "ResourceNotFound"
	CodeInvalidArgument  = "InvalidArgument"
	CodeInvalidContent   = "InvalidContent"
	CodeServerNotRunning = "ServerNotRunning" // server status is not running (offline)
	CodeServerNotSetup   = "ServerNotSetup"
	CodeServerBusy       = "ServerBusy" // another agent task is active on the server
	CodeServiceUnavail   = "ServiceUnavailable"
)

// Error is a failed API call: either an HTTP error answer (Status != 0) or a
// transport or decoding failure (Err != nil, Status 0).
type Error struct {
	API     string // cnapi, sapi, imgapi
	Method  string
	URL     string
	Status  int
	Code    string
	Message string
	// Err is the transport or decoding failure, if any.
	Err error
	// decode marks a response that could not be decoded (a shape mismatch:
	// retrying will not help).
	decode bool
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s %s %s: %v", e.API, e.Method, e.URL, e.Err)
	}
	if e.decode {
		return fmt.Sprintf("%s %s %s: HTTP %d: bad response: %v", e.API, e.Method, e.URL, e.Status, e.Err)
	}
	return fmt.Sprintf("%s %s %s: HTTP %d %s: %s", e.API, e.Method, e.URL, e.Status, e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// retryableCodes are 4xx answers that clear up by themselves.
var retryableCodes = map[string]bool{
	CodeServerBusy: true,
}

// Retryable is the one place that decides whether a failed call may succeed
// when repeated unchanged: transport failures, 5xx (except 501), 408, 429
// and the codes in retryableCodes. Bad requests, missing resources, refused
// states and undecodable answers are not.
func (e *Error) Retryable() bool {
	switch {
	case e.decode:
		return false
	case e.Status == 0:
		return !errors.Is(e.Err, context.Canceled)
	case e.Status == http.StatusNotImplemented:
		return false
	case e.Status >= 500, e.Status == http.StatusRequestTimeout, e.Status == http.StatusTooManyRequests:
		return true
	default:
		return retryableCodes[e.Code]
	}
}

// IsRetryable reports whether err is a Triton API error worth retrying.
// Errors that are not *Error (e.g. validation in the client) are not.
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable()
}

// IsNotFound reports a 404 answer.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// HasCode reports whether err is an API answer with the given error code.
func HasCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// ErrorCode returns the API error code of err ("" if none).
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
