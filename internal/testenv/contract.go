package testenv

import (
	"net/http"
	"sync"
	"testing"

	"github.com/fleetsaga/fleetsaga/fleet/openapi"
)

// contractCheck holds every answer of fleetsim's MGS instances,
// sled-agents and Nexus APIs in an integration test (faults included) to the vendored
// OpenAPI documents: a violation fails the test. Requests that match no
// operation are not this check's business (the clients' own tests check
// what they send).
func contractCheck(t testing.TB) func(api, prefix string, h http.Handler) http.Handler {
	rep := &afterTestReporter{t: t}
	t.Cleanup(rep.stop) // registered first: runs after fleetsim is closed
	contracts := map[string]*openapi.Contract{
		"mgs":            openapi.MustLoad(openapi.MGS),
		"sled-agent":     openapi.MustLoad(openapi.SledAgent),
		"nexus-lockstep": openapi.MustLoad(openapi.NexusLockstep),
		"nexus-external": openapi.MustLoad(openapi.NexusExternal),
	}
	return func(api, prefix string, h http.Handler) http.Handler {
		c := contracts[api]
		if c == nil {
			return h
		}
		notOurs := func(r *http.Request) bool { return c.Operation(r, prefix) == "" }
		return openapi.Middleware(c, prefix, rep, notOurs, h)
	}
}

// afterTestReporter drops reports that arrive after the test ended (a
// request still in flight when fleetsim closed): testing.T panics on those.
type afterTestReporter struct {
	mu      sync.Mutex
	t       testing.TB
	stopped bool
}

func (r *afterTestReporter) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.stopped {
		r.t.Errorf(format, args...)
	}
}

func (r *afterTestReporter) stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
}
