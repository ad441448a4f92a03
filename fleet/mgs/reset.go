package mgs

import (
	"errors"
	"net"
	"net/http"
)

// Codes of a 503 that MGS gives before it talks to the SP (discovery has
// not found it yet): a reset answered with one certainly did not happen.
// "ServiceUnavailable" is no MGS code: it is the answer of something in
// front of a dead MGS (fleetsim's mgs_down), also before any SP is asked.
var notSentCodes = map[string]bool{
	"SpAddressUnknown":        true,
	"DiscoveryNotYetComplete": true,
	"DiscoveryFailed ":        true, // trailing space: as MGS's source has it
	"ServiceUnavailable":      true,
}

// ResetNotSent reports whether a failed reset certainly did not reach the
// SP, so that asking the other MGS cannot reset the SP a second time
// inside its watchdog window (omicron's try_all_serially for resets moves
// on only then): MGS refused to reset the SP of its own sled, the
// connection was never made, or MGS answered before it talked to the SP.
// Any other failure — a lost reply, a timeout, 503 SpCommunicationFailed
// or Timeout (MGS could not disarm the watchdog, or gave up waiting for
// the SP) — may hide a reset that happened: the caller re-reads the SP
// before resetting again.
func ResetNotSent(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	if e.ResetState == resetStateLocalSled || e.Code == CodeResetSpOfLocalSled {
		return true
	}
	if e.Status == 0 {
		var op *net.OpError
		return errors.As(e.Err, &op) && op.Op == "dial"
	}
	return e.Status == http.StatusServiceUnavailable && notSentCodes[e.Code]
}
