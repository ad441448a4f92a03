// Package nexusexternal is the client of the part of Nexus's external
// (operator) API (nexus-external-2025112000.0.0.json) fleetsaga reads: the
// rack's update status, whose target release says whether the rack's own
// update system owns its software (docs/CONFORMANCE.md §I). The API is
// versioned (dropshot's api-version header) and authenticates its caller:
// every request carries an API token as a bearer token, read from a file
// at each call so a rotated token is used without a restart. The token
// never goes into an error.
package nexusexternal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/fleetsaga/fleetsaga/fleet/apiversion"
	"github.com/fleetsaga/fleetsaga/fleet/dropshot"
)

// APIVersion is the version of the document this client follows (its
// info.version): the oldest external API with the update status's
// target_release and suspended (omicron nexus/external-api/src/lib.rs,
// system_update_status_v2025_11_20_00). Nexus serves older clients and
// refuses a newer one (dropshot: 400), so asking the newest would fail on
// every rack whose release predates it.
const APIVersion = "2025112000.0.0"

// maxResponseBytes bounds what the client reads (an update status is a few
// hundred bytes).
const maxResponseBytes = 1 << 20

// maxErrorText bounds what of an error answer that is not dropshot's error
// body goes into Error.Message (enough to recognise a proxy's page).
const maxErrorText = 200

// maxTokenBytes bounds the token file: Nexus's API tokens are tens of
// bytes; a large file is not a token.
const maxTokenBytes = 4 << 10

// Error is a non-2xx answer (dropshot error body).
type Error struct {
	Op         string
	StatusCode int
	ErrorCode  string
	Message    string
	// TokenFile names the token that was sent (never the token).
	TokenFile string
}

func (e *Error) Error() string {
	code := e.ErrorCode
	if code == "" {
		code = http.StatusText(e.StatusCode)
	}
	msg := fmt.Sprintf("nexus external API %s: %d %s: %s", e.Op, e.StatusCode, code, e.Message)
	switch e.StatusCode {
	case http.StatusUnauthorized:
		msg += fmt.Sprintf("; the API token in %s was refused: put a valid token of a user of the rack's fleet in it (see docs/DEPLOYING.md)", e.TokenFile)
	case http.StatusForbidden:
		msg += fmt.Sprintf("; the user whose API token is in %s may not read the rack's update status: give it a role on the fleet that may", e.TokenFile)
	}
	return msg
}

// ErrBadResponse wraps a 2xx answer whose body does not match the API.
var ErrBadResponse = errors.New("nexus external API: malformed response")

// ErrToken wraps a token file that cannot be read or holds no token.
var ErrToken = errors.New("nexus external API: no API token")

// The one place that classifies this client's errors.

// IsRetryable: transport failures, 5xx, 429 and 408 may succeed unchanged;
// 401/403 (the token), a refused API version, other 4xx answers, a token
// file that cannot be read, a certificate that is not trusted, a
// cancelled context and a malformed answer do not.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrBadResponse) || errors.Is(err, ErrToken) || errors.Is(err, ErrUntrusted) || apiversion.IsRefused(err) {
		return false
	}
	var he *Error
	if errors.As(err, &he) {
		return he.StatusCode >= 500 || he.StatusCode == http.StatusTooManyRequests || he.StatusCode == http.StatusRequestTimeout
	}
	return true
}

// IsUnauthorized: the token was refused (401), or its user may not do
// this (403).
func IsUnauthorized(err error) bool {
	var he *Error
	return errors.As(err, &he) && (he.StatusCode == http.StatusUnauthorized || he.StatusCode == http.StatusForbidden)
}

// TargetRelease is the rack's target release (TargetRelease).
type TargetRelease struct {
	Version       string    `json:"version"`
	TimeRequested time.Time `json:"time_requested"`
}

// UpdateStatus is UpdateStatus: TargetRelease is nil until an operator
// sets one (the rack runs its initial, install dataset, release).
type UpdateStatus struct {
	TargetRelease              *TargetRelease `json:"target_release"`
	Suspended                  bool           `json:"suspended"`
	ComponentsByReleaseVersion map[string]int `json:"components_by_release_version"`
	TimeLastStepPlanned        time.Time      `json:"time_last_step_planned"`
}

// Client talks to one rack's Nexus external API.
type Client struct {
	api       *dropshot.Client
	tokenFile string
}

// New returns a client of the external API at baseURL that authenticates
// with the API token in tokenFile; hc nil means http.DefaultClient.
func New(baseURL, tokenFile string, hc *http.Client) *Client {
	return &Client{api: dropshot.New("Nexus external API", baseURL, hc, APIVersion, maxResponseBytes), tokenFile: tokenFile}
}

// UpdateStatus reads the rack's update status (GET /v1/system/update/status).
func (c *Client) UpdateStatus(ctx context.Context) (UpdateStatus, error) {
	var st UpdateStatus
	err := c.do(ctx, http.MethodGet, "/v1/system/update/status", nil, &st)
	if err == nil && st.TargetRelease != nil && st.TargetRelease.Version == "" {
		err = fmt.Errorf("%w: target_release without a version", ErrBadResponse)
	}
	return st, err
}

// SetTargetRelease makes an uploaded repository's system version the
// rack's target release (PUT /v1/system/update/target-release). fleetsaga
// itself never calls it; its tests give a rack a target release.
func (c *Client) SetTargetRelease(ctx context.Context, systemVersion string) error {
	body, _ := json.Marshal(map[string]string{"system_version": systemVersion})
	return c.do(ctx, http.MethodPut, "/v1/system/update/target-release", body, nil)
}

// token reads the API token from its file.
func (c *Client) token() (string, error) {
	if c.tokenFile == "" {
		return "", fmt.Errorf("%w: no token file is configured (--nexus-external-token-file, FLEETSAGA_NEXUS_EXTERNAL_TOKEN_FILE)", ErrToken)
	}
	f, err := os.Open(c.tokenFile)
	if err != nil {
		return "", fmt.Errorf("%w: token file %s: %v", ErrToken, c.tokenFile, errors.Unwrap(err))
	}
	defer f.Close()
	raw := make([]byte, maxTokenBytes+1)
	n, _ := f.Read(raw)
	tok := strings.TrimSpace(string(raw[:n]))
	switch {
	case n > maxTokenBytes:
		return "", fmt.Errorf("%w: token file %s is larger than %d bytes: it does not hold one API token", ErrToken, c.tokenFile, maxTokenBytes)
	case tok == "" || strings.ContainsAny(tok, " \t\r\n"):
		return "", fmt.Errorf("%w: token file %s does not hold one API token (one line, no spaces)", ErrToken, c.tokenFile)
	}
	return tok, nil
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	tok, err := c.token()
	if err != nil {
		return err
	}
	r := dropshot.JSON(method, path, body)
	r.Header = http.Header{"Authorization": {"Bearer " + tok}}
	reply, err := c.api.Do(ctx, r)
	if err != nil {
		return untrusted(err)
	}
	if !reply.OK() {
		f := c.api.Failure(reply, maxErrorText)
		if f.Refused != nil {
			return f.Refused
		}
		return &Error{Op: reply.Op, StatusCode: reply.Status, ErrorCode: f.ErrorCode, Message: f.Message, TokenFile: c.tokenFile}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(reply.Body, out); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadResponse, reply.Op, err)
	}
	return nil
}
