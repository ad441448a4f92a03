package mgs

import (
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"
)

// Today's MGS answers most SP refusals with 503 SpCommunicationFailed (or
// UpdateFailed), the codes of a transient failure. Retrying such an answer
// blindly turns a refusal for good into a half-hour retry. The functions
// here are the one place that decides what an ambiguous answer meant, from
// the SP's own state re-read after it: the SP is the source of truth.

// Ambiguous reports whether err is an MGS answer that may be an SP refusal
// as well as a transient failure: re-read the SP's state to tell.
func Ambiguous(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusServiceUnavailable &&
		(e.Code == CodeSpCommunicationFailed || e.Code == CodeUpdateFailed)
}

// CabooseInvalid reports whether a caboose read failed because the slot
// holds no valid image (normal for an inactive slot after a reset
// mid-update). MGS says so only in the message; these are the phrases the
// Nexus precheck matches (error_means_caboose_is_invalid, omicron#8014).
func CabooseInvalid(err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeSpCommunicationFailed {
		return false
	}
	for _, p := range []string{
		"the image caboose does not contain",
		"the image does not include a caboose",
		"failed to read data from the caboose",
	} {
		if strings.Contains(e.Message, p) {
			return true
		}
	}
	return false
}

// archiveRefusals are the messages of MGS's own refusals of an archive
// (management-gateway-service gateway-sp-comms/src/error.rs, UpdateError):
// an empty image, one MGS cannot read, one for another board or slot.
var archiveRefusals = []string{
	"update image cannot be empty",
	"hubris archive error",
	"error reading caboose in hubris archive",
	"board mismatch",
	"RoT slot mismatch",
	"error reading aux flash image",
	"corrupt aux flash image",
	"invalid zip archive",
	"an image was not found",
}

// ArchiveRefused reports whether an ambiguous start answer is MGS refusing
// our archive for good: empty, unreadable, or for another board. MGS
// checks these before it prepares anything and says so only in the
// message of a 503 UpdateFailed (e.g. "board mismatch: SP is X but
// archive is for Y"); sending the same archive again can only be refused
// again.
func ArchiveRefused(err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeUpdateFailed {
		return false
	}
	for _, m := range archiveRefusals {
		if strings.Contains(e.Message, m) {
			return true
		}
	}
	return false
}

// MessageOf is an MGS error reply's own message (the error's text when it
// is not one).
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	return err.Error()
}

// Verdict is what the SP's update status says about our update after a
// request about it got an ambiguous answer (or none).
type Verdict string

const (
	// VerdictRetry: nothing tells the request took effect or was refused
	// for good: retry it.
	VerdictRetry Verdict = "retry"
	// VerdictOurs: the SP holds our update (a start that took effect).
	VerdictOurs Verdict = "ours"
	// VerdictBusy: another update of this component is in progress.
	VerdictBusy Verdict = "busy"
	// VerdictAborted: our update is aborted (an abort that took effect).
	VerdictAborted Verdict = "aborted"
	// VerdictTooLate: our update is complete; it cannot be aborted.
	VerdictTooLate Verdict = "too_late"
	// VerdictNotCurrent: the SP has no update of ours in progress (none,
	// or another update that is not in progress): nothing to abort.
	VerdictNotCurrent Verdict = "not_current"
)

// StartVerdict reads the component's status after a start of update id
// got an ambiguous answer.
func StartVerdict(st UpdateStatus, id uuid.UUID) Verdict {
	switch {
	case st.State != UpdateNone && st.ID == id:
		return VerdictOurs
	case st.State == UpdatePreparing || st.State == UpdateInProgress:
		return VerdictBusy
	}
	return VerdictRetry
}

// AbortVerdict reads the component's status after an abort of update id
// got an ambiguous answer.
func AbortVerdict(st UpdateStatus, id uuid.UUID) Verdict {
	if st.State == UpdateNone || st.ID != id {
		return VerdictNotCurrent
	}
	switch st.State {
	case UpdateAborted:
		return VerdictAborted
	case UpdateComplete:
		return VerdictTooLate
	}
	return VerdictRetry // still preparing, in progress or failed: the abort did not take
}

// InProgress reports whether st is an update the SP is still working on.
func (s UpdateStatus) InProgress() bool {
	return s.State == UpdatePreparing || s.State == UpdateInProgress
}
