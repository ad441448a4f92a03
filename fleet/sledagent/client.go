package sledagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/apiversion"
	"github.com/fleetsaga/fleetsaga/fleet/dropshot"
)

// APIVersion is the sled-agent API version this client is written for:
// the document it follows, sled-agent-openapi-48.0.0.json (omicron
// openapi/sled-agent/sled-agent-48.0.0-*.json). Every request names it in
// the api-version header; a sled-agent that serves only an older API
// refuses it (apiversion.Refused, not retryable).
const APIVersion = "48.0.0"

// CodeZoneRemovalFailed is the error_code of fleetsim's opt-in
// remove-before-ledger mode for a PUT whose zone removal failed (the ledger
// was not changed and the same request may be retried). The real sled-agent
// has no such answer: fleetsaga never depends on it (a 500 is retried).
//
// The real sled-agent's 400s for an outdated generation ("sled config
// generation out of date (got G1, have G2)") or a changed config at the same
// generation ("sled config changed with the same generation (G)") carry no
// error_code: a client tells them apart by re-reading the sled's ledgered
// generation (IsBadRequest, then Inventory), never by a code.
const CodeZoneRemovalFailed = "ZoneRemovalFailed"

// maxResponseBytes bounds what the client reads from a sled-agent.
const maxResponseBytes = 8 << 20

// maxErrorText bounds what of an error answer that is not dropshot's error
// body goes into Error.Message.
const maxErrorText = 512

// Error is a non-2xx answer from the sled-agent (Dropshot error body).
type Error struct {
	Op         string // e.g. "PUT /omicron-config"
	StatusCode int
	ErrorCode  string
	Message    string
	RequestID  string
	// Refused is set when the answer is the refusal of our API version.
	Refused *apiversion.Refused
}

func (e *Error) Error() string {
	if e.Refused != nil {
		return fmt.Sprintf("sled-agent %s: %v", e.Op, e.Refused)
	}
	code := e.ErrorCode
	if code == "" {
		code = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("sled-agent %s: %d %s: %s", e.Op, e.StatusCode, code, e.Message)
}

// Unwrap exposes a refused API version (apiversion.IsRefused).
func (e *Error) Unwrap() error {
	if e.Refused != nil {
		return e.Refused
	}
	return nil
}

// Retryable is the one place that decides whether an HTTP error from a
// sled-agent is worth retrying unchanged: server-side failures (5xx, which
// includes a failed zone removal), 429 and 408. Other 4xx answers mean the
// request itself must change (a 400: re-read the ledger, then rebase).
func (e *Error) Retryable() bool {
	return e.StatusCode >= 500 || e.StatusCode == http.StatusTooManyRequests ||
		e.StatusCode == http.StatusRequestTimeout
}

// ErrBadResponse wraps a 2xx answer whose body does not match the API.
var ErrBadResponse = errors.New("sled-agent: malformed response")

// IsRetryable reports whether err (from this client) may succeed if the same
// call is repeated: transport failures and retryable HTTP errors are; a
// cancelled context, a malformed response and 4xx answers are not.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, ErrBadResponse) {
		return false
	}
	var he *Error
	if errors.As(err, &he) {
		return he.Retryable()
	}
	return true // transport: connection refused, reset, timeout
}

// HasCode reports whether err is a sled-agent error with error_code code.
func HasCode(err error, code string) bool {
	var he *Error
	return errors.As(err, &he) && he.ErrorCode == code
}

// IsBadRequest reports a 400: the sled-agent refused this config. Whether
// another writer moved the sled on (rebase) or the config itself is wrong
// only a fresh read of the ledgered generation can tell. A refused API
// version is not one: no config would be accepted.
func IsBadRequest(err error) bool {
	var he *Error
	return errors.As(err, &he) && he.StatusCode == http.StatusBadRequest && he.Refused == nil
}

// Client talks to one sled's sled-agent.
type Client struct {
	api *dropshot.Client
}

// New returns a client for the sled-agent at baseURL (e.g.
// http://127.0.0.1:1234/sled-agent/<sled>). hc nil means http.DefaultClient.
func New(baseURL string, hc *http.Client) *Client {
	return &Client{api: dropshot.New("sled-agent", baseURL, hc, APIVersion, maxResponseBytes)}
}

// PutOmicronConfig sends the sled's whole config (PUT /omicron-config → 204).
// Success means the sled ledgered it; today's sled-agent removes the zones
// left out afterwards, so only inventory proves a removal.
func (c *Client) PutOmicronConfig(ctx context.Context, cfg OmicronSledConfig) error {
	cfg = cfg.Normalized()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("sled-agent PUT /omicron-config: invalid config: %w", err)
	}
	body, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("sled-agent PUT /omicron-config: encode: %w", err)
	}
	return c.do(ctx, http.MethodPut, "/omicron-config", body, nil)
}

// Inventory reads the sled's inventory (GET /inventory).
func (c *Client) Inventory(ctx context.Context) (*Inventory, error) {
	var inv Inventory
	if err := c.do(ctx, http.MethodGet, "/inventory", nil, &inv); err != nil {
		return nil, err
	}
	if err := inv.validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadResponse, err)
	}
	return &inv, nil
}

// InventoryOf reads the inventory and checks that it is sled's: an endpoint
// that answers for another sled (misrouted, or a stale address) must never
// count as proof about this one. The mismatch is an ErrBadResponse (not
// retryable).
func (c *Client) InventoryOf(ctx context.Context, sled uuid.UUID) (*Inventory, error) {
	inv, err := c.Inventory(ctx)
	if err != nil {
		return nil, err
	}
	if inv.SledID != sled {
		return nil, fmt.Errorf("%w: asked sled %s, the inventory is sled %s's", ErrBadResponse, sled, inv.SledID)
	}
	return inv, nil
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	return c.send(ctx, dropshot.JSON(method, path, body), out)
}

// send is one request, its answer decoded into out (nil: not read).
func (c *Client) send(ctx context.Context, r dropshot.Request, out any) error {
	reply, err := c.api.Do(ctx, r)
	if err != nil {
		return err
	}
	if reply.Over {
		return fmt.Errorf("%w: %s: response over %d bytes", ErrBadResponse, reply.Op, maxResponseBytes)
	}
	if !reply.OK() {
		f := c.api.Failure(reply, maxErrorText)
		return &Error{Op: reply.Op, StatusCode: reply.Status, ErrorCode: f.ErrorCode, Message: f.Message,
			RequestID: f.RequestID, Refused: f.Refused}
	}
	if out == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(reply.Body))
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadResponse, reply.Op, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: %s: trailing data", ErrBadResponse, reply.Op)
	}
	return nil
}
