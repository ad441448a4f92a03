// Package openapi holds the real services' OpenAPI documents (vendored from
// oxidecomputer/omicron, see specs/NOTICE.md) and checks HTTP traffic against
// them: the fleet clients' requests in their tests, fleetsim's responses in
// the integration suite. A drift in either fails a test instead of a rack.
package openapi

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

//go:embed specs/*.json
var specs embed.FS

// The vendored documents.
const (
	MGS       = "mgs-openapi-3.0.0.json"
	SledAgent = "sled-agent-openapi-48.0.0.json"
	// NexusLockstep is Nexus's lockstep internal API (openapi/nexus-lockstep.json).
	NexusLockstep = "nexus-lockstep-0.0.1.json"
	// NexusExternal is Nexus's external (operator) API at the oldest
	// version that has the update status with target_release and
	// suspended (openapi/nexus/nexus-2025112000.0.0-53f3c8.json): the
	// version fleet/nexusexternal sends, so every rack since serves it.
	NexusExternal = "nexus-external-2025112000.0.0.json"
	// NexusExternalLatest is the newest external API
	// (openapi/nexus/nexus-2026081901.0.0-e5e4f5.json), what fleetsim's
	// Nexus serves (fleetsim/nexus/external.go).
	NexusExternalLatest = "nexus-external-2026081901.0.0.json"
)

// Contract is one API document, ready to check requests and responses.
type Contract struct {
	Name   string
	doc    *openapi3.T
	router routers.Router
}

var (
	loadMu sync.Mutex
	loaded = map[string]*Contract{}
)

// Load parses a vendored document once per process.
func Load(name string) (*Contract, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if c := loaded[name]; c != nil {
		return c, nil
	}
	raw, err := specs.ReadFile("specs/" + name)
	if err != nil {
		return nil, fmt.Errorf("openapi: no vendored document %q", name)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("openapi: parse %s: %w", name, err)
	}
	doc.Servers = nil // match any host: fleetsim and test servers listen anywhere
	for _, ref := range doc.Components.Schemas {
		if ref != nil && ref.Value != nil {
			ref.Value.Pattern = goPattern(ref.Value.Pattern)
		}
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: routes of %s: %w", name, err)
	}
	c := &Contract{Name: name, doc: doc, router: router}
	loaded[name] = c
	return c, nil
}

// Document returns a vendored document's raw JSON.
func Document(name string) ([]byte, error) {
	raw, err := specs.ReadFile("specs/" + name)
	if err != nil {
		return nil, fmt.Errorf("openapi: no vendored document %q", name)
	}
	return raw, nil
}

// MustLoad is Load for tests and package variables.
func MustLoad(name string) *Contract {
	c, err := Load(name)
	if err != nil {
		panic(err)
	}
	return c
}

var options = &openapi3filter.Options{
	AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
	MultiError:         true,
	// The documents' integer formats (uint8, uint32, …) and uuid are
	// checked as the JSON types they are.
}

// route finds the operation for req, whose path may carry a prefix that the
// real service does not have (fleetsim serves each MGS below /mgs/N).
func (c *Contract) route(req *http.Request, prefix string) (*openapi3filter.RequestValidationInput, error) {
	r := req.Clone(req.Context())
	if prefix != "" {
		p, ok := strings.CutPrefix(r.URL.Path, prefix)
		if !ok {
			return nil, fmt.Errorf("%s %s: path outside prefix %q", req.Method, req.URL.Path, prefix)
		}
		u := *r.URL
		u.Path, u.RawPath = p, ""
		r.URL = &u
	}
	route, params, err := c.router.FindRoute(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %s %s: no such operation: %v", c.Name, req.Method, r.URL.Path, err)
	}
	return &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: options}, nil
}

// Version is the document's API version (info.version): the version a
// client following it names in the api-version header.
func (c *Contract) Version() string { return c.doc.Info.Version }

// Versioned reports whether the server refuses a request that does not
// name its API version. Nexus's lockstep API is served without a version
// policy (omicron nexus/src/lib.rs): its clients and servers ship
// together.
func (c *Contract) Versioned() bool { return c.Name != NexusLockstep }

// versionHeader is where omicron's versioned APIs read the version a
// request is written for (dropshot's ClientSpecifiesVersionInHeader; the
// documents do not list it as a parameter).
const versionHeader = "api-version"

// ValidateRequest checks method, path, query, body and the api-version
// header of a request as the client sends it. body is the request body
// (nil for none).
func (c *Contract) ValidateRequest(req *http.Request, prefix string, body []byte) error {
	in, err := c.route(req, prefix)
	if err != nil {
		return err
	}
	if got := req.Header.Get(versionHeader); c.Versioned() && got != c.Version() {
		return fmt.Errorf("%s: request %s %s: %s header is %q, the document is version %q (the server refuses a request without it)",
			c.Name, req.Method, in.Request.URL.Path, versionHeader, got, c.Version())
	}
	in.Request.Body = io.NopCloser(bytes.NewReader(body))
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		return fmt.Errorf("%s: request %s %s: %w", c.Name, req.Method, in.Request.URL.Path, err)
	}
	return nil
}

// ValidateResponse checks a response (status, content type, body) to req
// against the operation's documented responses, including dropshot's error
// body for 4xx/5xx.
func (c *Contract) ValidateResponse(req *http.Request, prefix string, status int, header http.Header, body []byte) error {
	in, err := c.route(req, prefix)
	if err != nil {
		return err
	}
	in.Options = &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true, ExcludeRequestBody: true}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("%s: response %d to %s %s: %w", c.Name, status, req.Method, in.Request.URL.Path, err)
	}
	return nil
}

// Operation names the document's operationId for a request, or "".
func (c *Contract) Operation(req *http.Request, prefix string) string {
	in, err := c.route(req, prefix)
	if err != nil || in.Route.Operation == nil {
		return ""
	}
	return in.Route.Operation.OperationID
}

// goPattern makes a document's pattern compile with Go's regexp (RE2): a
// leading negative lookahead, which RE2 lacks, is dropped. The sled-agent
// document's Name has one ("not a UUID"); without it the rest of the
// pattern is still checked instead of every Name failing to validate.
func goPattern(p string) string {
	if _, err := regexp.Compile(p); err == nil || !strings.HasPrefix(p, "^(?!") {
		return p
	}
	depth := 0
	for i := 1; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return "^" + strings.TrimPrefix(p[i+1:], "^")
			}
		}
	}
	return p
}
