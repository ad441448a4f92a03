// Package mgs is a typed client for the Oxide management gateway service
// (MGS) HTTP API, following mgs-openapi-3.0.0.json: one Client per MGS
// instance, errors carrying the HTTP status and error_code, one Classify
// that decides retry-vs-fatal, its peers in decide.go that read an
// ambiguous 503 (today's MGS's answer to most SP refusals) from the SP's
// state, and Set.TryAll to fail over across the instances of a rack. Replies are decoded strictly: a missing required
// field, an unknown enum tag or malformed JSON is an error, never a zero
// value.
package mgs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/apiversion"
)

// APIVersion is the MGS API version this client is written for: the
// document it follows, mgs-openapi-3.0.0.json (omicron
// openapi/gateway/gateway-3.0.0-*.json, gateway-api's latest). Every
// request names it in the api-version header; an MGS that serves only an
// older API refuses it (apiversion.Refused).
const APIVersion = "3.0.0"

// maxReply bounds how much of a reply body is read.
const maxReply = 1 << 20

// Client talks to one MGS instance.
type Client struct {
	base string
	http *http.Client
}

// New returns a client for the MGS at base (e.g. "http://[fd00::1]:12225"
// or fleetsim's ".../mgs/0"). hc nil means http.DefaultClient.
func New(base string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimRight(base, "/"), http: hc}
}

// BaseURL is the instance's base URL.
func (c *Client) BaseURL() string { return c.base }

type call struct {
	op          string
	method      string
	path        string
	query       url.Values
	body        io.Reader
	size        int64 // body length, -1 unknown
	contentType string
	out         any  // decoded from a 200 reply
	resetErrors bool // error replies use SpComponentResetError
}

func (c *Client) do(ctx context.Context, k call) error {
	u := c.base + k.path
	if len(k.query) > 0 {
		u += "?" + k.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, k.method, u, k.body)
	if err != nil {
		return &Error{Op: k.op, MGS: c.base, Err: err, Decode: false, Status: 0}
	}
	if k.body != nil {
		req.ContentLength = k.size
		req.Header.Set("Content-Type", k.contentType)
	}
	req.Header.Set("Accept", "application/json")
	apiversion.Set(req, APIVersion)
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return &Error{Op: k.op, MGS: c.base, Err: ctx.Err()}
		}
		return &Error{Op: k.op, MGS: c.base, Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return &Error{Op: k.op, MGS: c.base, Err: fmt.Errorf("reading reply: %w", err)}
	}
	if resp.StatusCode >= 400 {
		return c.replyError(k, resp.StatusCode, body)
	}
	if k.out == nil {
		return nil
	}
	if resp.StatusCode != http.StatusOK {
		return &Error{Op: k.op, MGS: c.base, Status: resp.StatusCode, Decode: true,
			Err: fmt.Errorf("expected 200 with a body, got %d", resp.StatusCode)}
	}
	if err := json.Unmarshal(body, k.out); err != nil {
		return &Error{Op: k.op, MGS: c.base, Status: resp.StatusCode, Decode: true, Err: fmt.Errorf("%w; body %q", err, clip(body))}
	}
	return nil
}

func (c *Client) replyError(k call, status int, body []byte) error {
	e := &Error{Op: k.op, MGS: c.base, Status: status}
	var raw struct {
		RequestID string  `json:"request_id"`
		ErrorCode *string `json:"error_code"`
		Message   string  `json:"message"`
		State     string  `json:"state"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		e.Message = clip(body)
		return e
	}
	e.RequestID, e.Message = raw.RequestID, raw.Message
	if r := apiversion.Refusal("MGS", c.base, APIVersion, status, raw.Message); r != nil {
		e.Err = r
		return e
	}
	if raw.ErrorCode != nil {
		e.Code = *raw.ErrorCode
	}
	if k.resetErrors {
		e.ResetState = raw.State
		if raw.State == resetStateLocalSled && e.Message == "" {
			e.Message = "cannot reset SP of the sled hosting MGS"
		}
	}
	return e
}

func clip(b []byte) string {
	const n = 300
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func spPath(id SpIdentifier) string {
	return "/sp/" + url.PathEscape(string(id.Type)) + "/" + strconv.Itoa(int(id.Slot))
}

func compPath(id SpIdentifier, component string) string {
	return spPath(id) + "/component/" + url.PathEscape(component)
}

func jsonBody(v any) (io.Reader, int64) {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b), int64(len(b))
}

// SpState reads the SP's identity and state (GET /sp/{type}/{slot}).
func (c *Client) SpState(ctx context.Context, id SpIdentifier) (SpState, error) {
	var out SpState
	err := c.do(ctx, call{op: "sp-get " + id.String(), method: http.MethodGet, path: spPath(id), out: &out})
	return out, err
}

// AllSpIDs lists the SPs this MGS knows (GET /local/all-sp-ids).
func (c *Client) AllSpIDs(ctx context.Context) ([]SpIdentifier, error) {
	var out []SpIdentifier
	err := c.do(ctx, call{op: "all-sp-ids", method: http.MethodGet, path: "/local/all-sp-ids", out: &out})
	return out, err
}

// UpdateStart sends an image to update component in firmwareSlot, tagged
// with updateID. It returns once the SP acked prepare; MGS delivers the
// image in the background. size is the body length (-1 unknown).
func (c *Client) UpdateStart(ctx context.Context, id SpIdentifier, component string, updateID uuid.UUID, firmwareSlot uint16, image io.Reader, size int64) error {
	q := url.Values{"id": {updateID.String()}, "firmware_slot": {strconv.Itoa(int(firmwareSlot))}}
	return c.do(ctx, call{
		op: fmt.Sprintf("update %s %s slot %d id %s", id, component, firmwareSlot, updateID), method: http.MethodPost,
		path: compPath(id, component) + "/update", query: q, body: image, size: size, contentType: "application/octet-stream",
	})
}

// UpdateStatus asks the SP for component's update status.
func (c *Client) UpdateStatus(ctx context.Context, id SpIdentifier, component string) (UpdateStatus, error) {
	var out UpdateStatus
	err := c.do(ctx, call{op: "update-status " + id.String() + " " + component, method: http.MethodGet,
		path: compPath(id, component) + "/update-status", out: &out})
	return out, err
}

// UpdateAbort aborts update updateID of component (only if it is current).
func (c *Client) UpdateAbort(ctx context.Context, id SpIdentifier, component string, updateID uuid.UUID) error {
	body, n := jsonBody(map[string]string{"id": updateID.String()})
	return c.do(ctx, call{op: fmt.Sprintf("update-abort %s %s id %s", id, component, updateID), method: http.MethodPost,
		path: compPath(id, component) + "/update-abort", body: body, size: n, contentType: "application/json"})
}

// Reset resets component (ComponentSP resets the SP itself). An MGS
// refuses to reset its own sled's SP: HasCode(err, CodeResetSpOfLocalSled).
func (c *Client) Reset(ctx context.Context, id SpIdentifier, component string) error {
	return c.do(ctx, call{op: "reset " + id.String() + " " + component, method: http.MethodPost,
		path: compPath(id, component) + "/reset", resetErrors: true})
}

// ActiveSlot reads component's active slot.
func (c *Client) ActiveSlot(ctx context.Context, id SpIdentifier, component string) (uint16, error) {
	var out struct {
		Slot *uint16 `json:"slot"`
	}
	err := c.do(ctx, call{op: "active-slot " + id.String() + " " + component, method: http.MethodGet,
		path: compPath(id, component) + "/active-slot", out: &out})
	if err == nil && out.Slot == nil {
		err = &Error{Op: "active-slot", MGS: c.base, Status: 200, Decode: true, Err: errors.New("SpComponentFirmwareSlot: slot is required")}
	}
	if err != nil {
		return 0, err
	}
	return *out.Slot, nil
}

// SetActiveSlot makes slot active for component, persistently or for the
// next boot only.
func (c *Client) SetActiveSlot(ctx context.Context, id SpIdentifier, component string, slot uint16, persist bool) error {
	body, n := jsonBody(map[string]uint16{"slot": slot})
	return c.do(ctx, call{op: fmt.Sprintf("set-active-slot %s %s %d persist=%t", id, component, slot, persist), method: http.MethodPost,
		path: compPath(id, component) + "/active-slot", query: url.Values{"persist": {strconv.FormatBool(persist)}},
		body: body, size: n, contentType: "application/json"})
}

// Caboose reads the caboose of component's firmwareSlot (for the SP: 0 is
// the active bank, 1 the inactive one). A slot without a valid image
// answers 503 SpCommunicationFailed: CabooseInvalid(err) tells. The host
// boot flash has no caboose (use HashGet).
func (c *Client) Caboose(ctx context.Context, id SpIdentifier, component string, firmwareSlot uint16) (Caboose, error) {
	var out Caboose
	err := c.do(ctx, call{op: fmt.Sprintf("caboose %s %s slot %d", id, component, firmwareSlot), method: http.MethodGet,
		path: compPath(id, component) + "/caboose", query: url.Values{"firmware_slot": {strconv.Itoa(int(firmwareSlot))}}, out: &out})
	return out, err
}

// PowerState reads the host power state.
func (c *Client) PowerState(ctx context.Context, id SpIdentifier) (PowerState, error) {
	var out PowerState
	err := c.do(ctx, call{op: "power-state " + id.String(), method: http.MethodGet, path: spPath(id) + "/power-state", out: &out})
	if err == nil && out != PowerA0 && out != PowerA1 && out != PowerA2 {
		err = &Error{Op: "power-state", MGS: c.base, Status: 200, Decode: true, Err: fmt.Errorf("unknown power state %q", out)}
	}
	return out, err
}

// SetPowerState sets the host power state (A2 then A0 power-cycles the host).
func (c *Client) SetPowerState(ctx context.Context, id SpIdentifier, state PowerState) error {
	body, n := jsonBody(state)
	return c.do(ctx, call{op: "set-power-state " + id.String() + " " + string(state), method: http.MethodPost,
		path: spPath(id) + "/power-state", body: body, size: n, contentType: "application/json"})
}

// HashGet reads the hash of a host boot flash slot.
func (c *Client) HashGet(ctx context.Context, id SpIdentifier, component string, firmwareSlot uint16) (HashStatus, error) {
	var out HashStatus
	err := c.do(ctx, call{op: fmt.Sprintf("hash %s %s slot %d", id, component, firmwareSlot), method: http.MethodGet,
		path: compPath(id, component) + "/hash/" + strconv.Itoa(int(firmwareSlot)), out: &out})
	return out, err
}

// HashStart starts hashing a host boot flash slot.
func (c *Client) HashStart(ctx context.Context, id SpIdentifier, component string, firmwareSlot uint16) error {
	return c.do(ctx, call{op: fmt.Sprintf("hash-start %s %s slot %d", id, component, firmwareSlot), method: http.MethodPost,
		path: compPath(id, component) + "/hash/" + strconv.Itoa(int(firmwareSlot))})
}

// HostPhase2Progress reads the last host phase 2 request this MGS has
// seen. Today's MGS answers only with the requests it served itself, so
// the MGS the SP did not attach to answers none: ask every instance (an
// MGS offering the SP's own record answers the same from each).
func (c *Client) HostPhase2Progress(ctx context.Context, id SpIdentifier) (HostPhase2Progress, error) {
	var out HostPhase2Progress
	err := c.do(ctx, call{op: "host-phase2-progress " + id.String(), method: http.MethodGet,
		path: spPath(id) + "/host-phase2-progress", out: &out})
	return out, err
}

// StartupOptions reads the host startup options the SP holds.
func (c *Client) StartupOptions(ctx context.Context, id SpIdentifier) (HostStartupOptions, error) {
	var out HostStartupOptions
	err := c.do(ctx, call{op: "startup-options " + id.String(), method: http.MethodGet,
		path: spPath(id) + "/startup-options", out: &out})
	return out, err
}

// SetStartupOptions replaces the host startup options (the whole object);
// the host reads them at its next boot.
func (c *Client) SetStartupOptions(ctx context.Context, id SpIdentifier, opts HostStartupOptions) error {
	body, n := jsonBody(opts)
	return c.do(ctx, call{op: fmt.Sprintf("set-startup-options %s phase2_recovery_mode=%t", id, opts.Phase2RecoveryMode),
		method: http.MethodPost, path: spPath(id) + "/startup-options", body: body, size: n, contentType: "application/json"})
}

// ClearHostPhase2Progress makes this MGS forget the last phase 2 request
// it saw.
func (c *Client) ClearHostPhase2Progress(ctx context.Context, id SpIdentifier) error {
	return c.do(ctx, call{op: "host-phase2-progress-delete " + id.String(), method: http.MethodDelete,
		path: spPath(id) + "/host-phase2-progress"})
}

// UploadHostPhase2 caches a phase 2 recovery image in this MGS and returns
// its SHA-256 (hex).
func (c *Client) UploadHostPhase2(ctx context.Context, image io.Reader, size int64) (string, error) {
	var out struct {
		SHA256 *string `json:"sha256_hash"`
	}
	err := c.do(ctx, call{op: "recovery-host-phase2", method: http.MethodPost, path: "/recovery/host-phase2",
		body: image, size: size, contentType: "application/octet-stream", out: &out})
	if err == nil && out.SHA256 == nil {
		err = &Error{Op: "recovery-host-phase2", MGS: c.base, Status: 200, Decode: true, Err: errors.New("sha256_hash is required")}
	}
	if err != nil {
		return "", err
	}
	return *out.SHA256, nil
}
