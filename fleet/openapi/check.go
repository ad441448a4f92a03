package openapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Reporter receives contract violations; *testing.T satisfies it.
type Reporter interface {
	Errorf(format string, args ...any)
}

// Transport wraps an http.RoundTripper so every request a client sends (and
// every response it gets) is checked against the contract; violations go to
// rep. Use it in client tests: the client under test cannot tell.
type Transport struct {
	Contract *Contract
	Prefix   string
	Base     http.RoundTripper
	Rep      Reporter
	// Responses also checks what came back (off when the server is a fake
	// that answers only what the test needs).
	Responses bool
}

func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	if err := t.Contract.ValidateRequest(req, t.Prefix, body); err != nil {
		t.Rep.Errorf("contract: %v", err)
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil || !t.Responses {
		return resp, err
	}
	rb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	if verr := t.Contract.ValidateResponse(req, t.Prefix, resp.StatusCode, resp.Header, rb); verr != nil {
		t.Rep.Errorf("contract: %v", verr)
	}
	return resp, nil
}

// Middleware checks every response a handler gives (fleetsim, in the
// integration suite) against the contract. Requests that match no
// operation of the document are reported too, unless skip says they are
// not this API's (fleetsim's truth and fault endpoints).
func Middleware(c *Contract, prefix string, rep Reporter, skip func(*http.Request) bool, next http.Handler) http.Handler {
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if skip != nil && skip(r) {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		res := rec.Result()
		body := rec.Body.Bytes()
		if err := c.ValidateResponse(r, prefix, res.StatusCode, res.Header, body); err != nil {
			mu.Lock()
			rep.Errorf("contract: %v", err)
			mu.Unlock()
		}
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		_, _ = w.Write(body)
	})
}
