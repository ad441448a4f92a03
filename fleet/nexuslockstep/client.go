// Package nexuslockstep is the client of the part of Nexus's lockstep API
// (nexus-lockstep-0.0.1.json) fleetsaga uses to work through the owner of
// sled configs (docs/CONFORMANCE.md §I): the target blueprint (view, set), a blueprint
// (view, import). The API is not versioned (no api-version header).
//
// A blueprint is kept as the JSON Nexus sent: fleetsaga edits only a sled's
// generation and one zone's disposition, and every field it does not know
// goes back unchanged.
package nexuslockstep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/dropshot"
)

// maxResponseBytes bounds what the client reads (a blueprint of a full rack
// is a few hundred KiB).
const maxResponseBytes = 16 << 20

// maxErrorText bounds what of an error answer that is not dropshot's error
// body goes into Error.Message (enough to recognise a proxy's page).
const maxErrorText = 200

// Error codes Nexus answers that the client tells apart.
const (
	// CodeInvalidRequest on POST /deployment/blueprints/target: the
	// blueprint's parent is not the current target (the target moved on).
	CodeInvalidRequest = "InvalidRequest"
	// CodeObjectNotFound: no such blueprint.
	CodeObjectNotFound = "ObjectNotFound"
)

// Error is a non-2xx answer (dropshot error body).
type Error struct {
	Op         string
	StatusCode int
	ErrorCode  string
	Message    string
}

func (e *Error) Error() string {
	code := e.ErrorCode
	if code == "" {
		code = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("nexus lockstep %s: %d %s: %s", e.Op, e.StatusCode, code, e.Message)
}

// ErrBadResponse wraps a 2xx answer whose body does not match the API.
var ErrBadResponse = errors.New("nexus lockstep: malformed response")

// The one place that classifies this client's errors.

// IsRetryable: transport failures, 5xx, 429 and 408 may succeed unchanged;
// other 4xx answers, a cancelled context and a malformed answer do not.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrBadResponse) {
		return false
	}
	var he *Error
	if errors.As(err, &he) {
		return he.StatusCode >= 500 || he.StatusCode == http.StatusTooManyRequests || he.StatusCode == http.StatusRequestTimeout
	}
	return true
}

// IsTargetMoved: making a blueprint the target was refused because its
// parent is no longer the current target (rebase onto the new one).
func IsTargetMoved(err error) bool {
	var he *Error
	return errors.As(err, &he) && he.StatusCode == http.StatusBadRequest && he.ErrorCode == CodeInvalidRequest &&
		strings.Contains(he.Message, "is not the current target blueprint")
}

// IsNotFound: the blueprint does not exist (404 ObjectNotFound).
func IsNotFound(err error) bool {
	var he *Error
	return errors.As(err, &he) && he.StatusCode == http.StatusNotFound && he.ErrorCode == CodeObjectNotFound
}

// IsNotLockstepAPI: the endpoint answers the target's view, which every
// Nexus serves unversioned, with dropshot's answer of another server: 404
// and no Nexus error code (a route it does not have), or 400 without a
// code for a missing api-version header (a versioned server, such as
// Nexus's internal API on 12221: omicron nexus/src/lib.rs gives it
// ClientSpecifiesVersionInHeader, which refuses before routing). Whatever
// listens there is not the lockstep API; it never means the rack has no
// owner.
func IsNotLockstepAPI(err error) bool {
	var he *Error
	if !errors.As(err, &he) {
		return false
	}
	switch he.StatusCode {
	case http.StatusNotFound:
		return he.ErrorCode != CodeObjectNotFound
	case http.StatusBadRequest:
		return he.ErrorCode == "" && strings.Contains(he.Message, "api-version")
	}
	return false
}

// The ports of a Nexus zone (omicron common/src/address.rs): the lockstep
// API, and the internal API an endpoint is easily pointed at instead.
const (
	LockstepPort = 12232
	InternalPort = 12221
)

// NotLockstepAPI says, for an operator, what IsNotLockstepAPI found at url.
func NotLockstepAPI(url string) string {
	return fmt.Sprintf("%s answers GET /deployment/blueprints/target as another server would (404 without a Nexus error code, or 400 for a missing api-version header): it is not Nexus's lockstep API "+
		"(a Nexus zone serves it on port %d; %d is its internal API); fix the nexus-lockstep endpoint", url, LockstepPort, InternalPort)
}

// Disabled says, for an operator, why a disabled target stops the work.
func Disabled(t Target) string {
	return fmt.Sprintf("target blueprint %s is disabled: an operator paused Nexus's executor (its planner still runs), so Nexus still owns the rack; "+
		"fleetsaga neither writes behind it nor enables it; enable the target (omdb nexus blueprints target enable %s), then run the update again",
		t.TargetID, t.TargetID)
}

// Target is BlueprintTarget.
type Target struct {
	TargetID       uuid.UUID `json:"target_id"`
	Enabled        bool      `json:"enabled"`
	TimeMadeTarget time.Time `json:"time_made_target"`
}

// Client talks to one rack's Nexus lockstep API.
type Client struct {
	api *dropshot.Client
}

// New returns a client for the lockstep API at baseURL; hc nil means
// http.DefaultClient.
func New(baseURL string, hc *http.Client) *Client {
	return &Client{api: dropshot.New("nexus lockstep", baseURL, hc, "", maxResponseBytes)}
}

// Target reads the current target (GET /deployment/blueprints/target).
func (c *Client) Target(ctx context.Context) (Target, error) {
	var t Target
	if err := c.do(ctx, http.MethodGet, "/deployment/blueprints/target", nil, &t); err != nil {
		return t, err
	}
	if t.TargetID == uuid.Nil {
		return t, fmt.Errorf("%w: target without target_id", ErrBadResponse)
	}
	return t, nil
}

// Current reads the target and its blueprint.
func (c *Client) Current(ctx context.Context) (Target, *Blueprint, error) {
	t, err := c.Target(ctx)
	if err != nil {
		return t, nil, err
	}
	bp, err := c.Blueprint(ctx, t.TargetID)
	return t, bp, err
}

// Blueprint reads one blueprint (GET /deployment/blueprints/all/{id}).
func (c *Client) Blueprint(ctx context.Context, id uuid.UUID) (*Blueprint, error) {
	var raw json.RawMessage
	if err := c.do(ctx, http.MethodGet, "/deployment/blueprints/all/"+id.String(), nil, &raw); err != nil {
		return nil, err
	}
	bp, err := ParseBlueprint(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadResponse, err)
	}
	if bp.ID != id {
		return nil, fmt.Errorf("%w: asked for blueprint %s, got %s", ErrBadResponse, id, bp.ID)
	}
	return bp, nil
}

// Import stores a blueprint (POST /deployment/blueprints/import → 204); it
// does not make it the target. A second import of the same ID fails in
// Nexus's database (500): after a lost answer, read the blueprint back.
func (c *Client) Import(ctx context.Context, bp *Blueprint) error {
	body, err := json.Marshal(bp)
	if err != nil {
		return fmt.Errorf("nexus lockstep import: encode: %w", err)
	}
	return c.do(ctx, http.MethodPost, "/deployment/blueprints/import", body, nil)
}

// SetTarget makes a blueprint the target (POST /deployment/blueprints/target).
// Nexus accepts only a child of the current target (IsTargetMoved otherwise).
func (c *Client) SetTarget(ctx context.Context, id uuid.UUID, enabled bool) (Target, error) {
	body, _ := json.Marshal(map[string]any{"target_id": id, "enabled": enabled})
	var t Target
	err := c.do(ctx, http.MethodPost, "/deployment/blueprints/target", body, &t)
	return t, err
}

// SetTargetEnabled enables or disables the current target (PUT
// /deployment/blueprints/target/enabled: an operator's pause of Nexus's
// executor). fleetsaga itself never calls it; its tests pause a rack.
func (c *Client) SetTargetEnabled(ctx context.Context, id uuid.UUID, enabled bool) (Target, error) {
	body, _ := json.Marshal(map[string]any{"target_id": id, "enabled": enabled})
	var t Target
	err := c.do(ctx, http.MethodPut, "/deployment/blueprints/target/enabled", body, &t)
	return t, err
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	reply, err := c.api.Do(ctx, dropshot.JSON(method, path, body))
	if err != nil {
		return err
	}
	if !reply.OK() {
		f := c.api.Failure(reply, maxErrorText)
		return &Error{Op: reply.Op, StatusCode: reply.Status, ErrorCode: f.ErrorCode, Message: f.Message}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(reply.Body, out); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadResponse, reply.Op, err)
	}
	return nil
}
