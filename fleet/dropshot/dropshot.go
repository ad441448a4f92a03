// Package dropshot sends the requests of fleetsaga's clients of omicron's
// dropshot servers (sled-agent, Nexus's lockstep and external APIs) and reads their
// answers: one request shape (Accept JSON, the api-version header where
// the API is versioned, a sized body), a bounded reply, and dropshot's
// error body (HttpErrorResponseBody) read one way. Each client keeps its
// own error type and decides in one place what is retryable; this package
// only carries the bytes.
package dropshot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/fleetsaga/fleetsaga/fleet/apiversion"
)

// Client sends requests to one dropshot server.
type Client struct {
	api      string
	base     string
	version  string
	http     *http.Client
	maxReply int
}

// New returns a client of the server at base. api names the service at the
// start of every error ("sled-agent"); version is the api-version the
// client was written for ("" for an API that is not versioned: no header);
// at most maxReply bytes of a reply are read. hc nil means
// http.DefaultClient.
func New(api, base string, hc *http.Client, version string, maxReply int) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{api: api, base: strings.TrimRight(base, "/"), version: version, http: hc, maxReply: maxReply}
}

// Request is one call: Body nil means none; Size is its length (-1:
// unknown).
type Request struct {
	Method, Path string
	Body         io.Reader
	Size         int64
	ContentType  string
	// Header is added to the request (an API that authenticates its
	// callers: Authorization). Never put it in an error.
	Header http.Header
}

// JSON is a request whose body (nil: none) is JSON.
func JSON(method, path string, body []byte) Request {
	if body == nil {
		return Request{Method: method, Path: path, Size: -1}
	}
	return Request{Method: method, Path: path, Body: bytes.NewReader(body), Size: int64(len(body)), ContentType: "application/json"}
}

// Op names a request in errors: its method and path, without the query.
func (r Request) Op() string {
	op := r.Method + " " + r.Path
	if i := strings.IndexByte(op, '?'); i >= 0 {
		op = op[:i]
	}
	return op
}

// Reply is a server's answer.
type Reply struct {
	Op     string
	Status int
	// Body is the answer's body, its first maxReply bytes when Over.
	Body []byte
	Over bool
}

// OK reports a 2xx answer.
func (r Reply) OK() bool { return r.Status >= 200 && r.Status <= 299 }

// Do sends r. Its error is the transport's or the reply's read, named
// "<api> <op>: …" (whether it is worth retrying is the client's call).
func (c *Client) Do(ctx context.Context, r Request) (Reply, error) {
	reply := Reply{Op: r.Op()}
	req, err := http.NewRequestWithContext(ctx, r.Method, c.base+r.Path, r.Body)
	if err != nil {
		return reply, fmt.Errorf("%s %s: %w", c.api, reply.Op, err)
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	if c.version != "" {
		apiversion.Set(req, c.version)
	}
	if r.Body != nil {
		req.Header.Set("Content-Type", r.ContentType)
		req.ContentLength = r.Size
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return reply, fmt.Errorf("%s %s: %w", c.api, reply.Op, err)
	}
	defer resp.Body.Close()
	// One byte past the bound tells a reply that fits from one cut short.
	raw, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.maxReply)+1))
	if err != nil {
		return reply, fmt.Errorf("%s %s: read response: %w", c.api, reply.Op, err)
	}
	reply.Status, reply.Over = resp.StatusCode, len(raw) > c.maxReply
	reply.Body = raw[:min(len(raw), c.maxReply)]
	return reply, nil
}

// Failure is a non-2xx answer read as dropshot's error body.
type Failure struct {
	RequestID string
	ErrorCode string
	Message   string
	// Refused is set when the answer is the refusal of the client's
	// api-version (never for an API that is not versioned).
	Refused *apiversion.Refused
}

// Failure reads r's body as dropshot's error body; a body that is not one
// (no message) becomes the Message, trimmed to its first clip bytes.
func (c *Client) Failure(r Reply, clip int) Failure {
	var eb struct {
		RequestID string `json:"request_id"`
		ErrorCode string `json:"error_code"`
		Message   string `json:"message"`
	}
	if json.Unmarshal(r.Body, &eb) != nil || eb.Message == "" {
		return Failure{Message: strings.TrimSpace(string(r.Body[:min(len(r.Body), clip)]))}
	}
	f := Failure{RequestID: eb.RequestID, ErrorCode: eb.ErrorCode, Message: eb.Message}
	if c.version != "" {
		f.Refused = apiversion.Refusal(c.api, c.base, c.version, r.Status, eb.Message)
	}
	return f
}
