// Package apiversion is the API version every request to a versioned
// omicron service carries. MGS and sled-agent are dropshot servers with
// the ClientSpecifiesVersionInHeader policy and no default for a missing
// header (omicron gateway/src/lib.rs, sled-agent/src/server.rs): a request
// must name the version its client was written for in the `api-version`
// header, and a server refuses one without it, with a value that is not a
// semver, or newer than the newest version it serves, with a 400 and no
// error_code (dropshot/src/versioning.rs). A client pins its version to
// the document it follows; an older server's refusal is one clear,
// non-retryable error naming that version and what the server said.
package apiversion

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Header is omicron's VERSION_HEADER (common/src/api/mod.rs).
const Header = "api-version"

// Dropshot's messages for a refused version (dropshot/src/versioning.rs).
// HeaderName's Debug form quotes the name.
const (
	msgNewer   = "server does not support this API version: "
	msgMissing = `missing expected header "` + Header + `"`
	msgBad     = `bad value for header "` + Header + `": `
)

// Set names version in req's api-version header.
func Set(req *http.Request, version string) { req.Header.Set(Header, version) }

// Refused is a server's refusal of the API version a client sent.
type Refused struct {
	// API names the service ("MGS", "sled-agent").
	API string
	// Server is the base URL of the instance that refused.
	Server string
	// Ours is the version the client sent (the one it was written for).
	Ours string
	// Said is the server's message (dropshot names the version it did not
	// accept; it does not name its own).
	Said string
}

func (e *Refused) Error() string {
	api := strings.TrimSuffix(e.API, " API") // "Nexus external API" names itself one
	hint := fmt.Sprintf("the server serves an older %s API than this fleetsaga needs; update the rack's %s or run a fleetsaga built for its API version", api, api)
	if !strings.HasPrefix(e.Said, msgNewer) {
		hint = "the " + Header + " header did not reach the server as sent (a proxy between them?)"
	}
	return fmt.Sprintf("%s at %s refused API version %s, the version this client was written for (the server said: %q): %s",
		e.API, e.Server, e.Ours, e.Said, hint)
}

// Refusal returns the Refused error when a reply is dropshot's refusal of
// the api-version header (a 400 with one of its messages), else nil.
func Refusal(api, server, ours string, status int, message string) *Refused {
	if status != http.StatusBadRequest {
		return nil
	}
	if !strings.HasPrefix(message, msgNewer) && message != msgMissing && !strings.HasPrefix(message, msgBad) {
		return nil
	}
	return &Refused{API: api, Server: server, Ours: ours, Said: message}
}

// IsRefused reports whether err is (or wraps) a Refused.
func IsRefused(err error) bool {
	var r *Refused
	return errors.As(err, &r)
}
