// Package workerapp is the worker's body, separate from its main so tests
// can run real workers in-process: it registers every workflow and activity
// and runs until its context ends.
package workerapp

import (
	"net/http"

	"github.com/rs/zerolog"

	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// Deps are what activities are built from.
type Deps struct {
	Ledger *ledger.Store
	Fleet  fleet.Endpoints
	// HTTP is the client every fleet API client shares (timeouts set by the caller).
	HTTP *http.Client
	Log  zerolog.Logger
	// Identity names this worker (host:pid) in the ledger's event log.
	Identity string
}
