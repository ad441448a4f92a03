// Package triton holds typed clients for the Triton DataCenter APIs that
// agent updates use: CNAPI (servers, agents, cn-agent tasks), SAPI (agent
// services and instances: the intent) and IMGAPI (agent images). They speak
// the real APIs' shapes (joyent/sdc-cnapi, sdc-sapi, sdc-imgapi), so they work
// against fleetsim and real endpoints alike.
//
// Decoding is strict by default: unknown fields, wrong types, trailing data
// and oversized answers are errors, so a shape drift between fleetsim and the
// client is caught at once. Real endpoints answer many more fields than
// fleetsaga uses: point at them with WithAllowUnknownFields.
package triton

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds one request when the caller's context has no
// deadline. A task wait asks for its own, longer bound.
const DefaultTimeout = 30 * time.Second

// maxResponse bounds a decoded answer (10,000 servers with agents fit).
const maxResponse = 64 << 20

// Option configures a client.
type Option func(*client)

// WithHTTPClient sets the HTTP client (default: a client with no overall
// timeout; each call is bounded by its context or DefaultTimeout).
func WithHTTPClient(hc *http.Client) Option { return func(c *client) { c.hc = hc } }

// WithAllowUnknownFields accepts answer fields the client does not know
// (needed against real Triton endpoints).
func WithAllowUnknownFields() Option { return func(c *client) { c.allowUnknown = true } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *client) { c.userAgent = ua } }

type client struct {
	api          string
	base         string
	hc           *http.Client
	allowUnknown bool
	userAgent    string
}

func newClient(api, base string, opts []Option) (*client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: base URL %q is not an http(s) URL", api, base)
	}
	c := &client{api: api, base: strings.TrimRight(base, "/"), hc: http.DefaultClient, userAgent: "fleetsaga"}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// errorBody accepts restify's {code, message} and Dropshot's
// {request_id, error_code, message} (fleetsim's fault layer).
type errorBody struct {
	Code      string `json:"code"`
	ErrorCode string `json:"error_code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

// do sends one request. in (if non-nil) is sent as JSON; out (if non-nil)
// receives the decoded answer; a 204 leaves out untouched.
func (c *client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	fail := func(status int, err error, decode bool) error {
		return &Error{API: c.api, Method: method, URL: u, Status: status, Err: err, decode: decode}
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s %s: encode request: %w", c.api, method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return fmt.Errorf("%s %s %s: %w", c.api, method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fail(0, err, false)
	}
	defer resp.Body.Close()
	lr := io.LimitReader(resp.Body, maxResponse+1)
	if resp.StatusCode >= 300 {
		raw, rerr := io.ReadAll(io.LimitReader(lr, 1<<20))
		if rerr != nil {
			return fail(0, rerr, false)
		}
		e := &Error{API: c.api, Method: method, URL: u, Status: resp.StatusCode}
		var eb errorBody
		if json.Unmarshal(raw, &eb) == nil {
			e.Code, e.Message = eb.Code, eb.Message
			if e.Code == "" {
				e.Code = eb.ErrorCode
			}
		}
		if e.Message == "" {
			e.Message = strings.TrimSpace(string(raw))
			if len(e.Message) > 200 {
				e.Message = e.Message[:200] + "…"
			}
		}
		return e
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, lr)
		return nil
	}
	raw, err := io.ReadAll(lr)
	if err != nil {
		return fail(0, err, false)
	}
	if len(raw) > maxResponse {
		return fail(resp.StatusCode, fmt.Errorf("answer exceeds %d bytes", maxResponse), true)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if !c.allowUnknown {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(out); err != nil {
		return fail(resp.StatusCode, err, true)
	}
	if dec.More() {
		return fail(resp.StatusCode, errors.New("trailing data after JSON answer"), true)
	}
	return nil
}

// get is do with GET and no body.
func (c *client) get(ctx context.Context, path string, query url.Values, out any) error {
	return c.do(ctx, http.MethodGet, path, query, nil, out)
}

func pathEscape(s string) string { return url.PathEscape(s) }
