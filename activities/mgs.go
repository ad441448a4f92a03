package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// MGSActivities do every MGS call of the SP firmware and host boot flash
// workflows. Failing over across MGS instances happens in fleet/mgs.Set;
// whether an error is retryable is decided by mgsErr.
type MGSActivities struct {
	// MGS is nil when the worker has no MGS endpoints (every call then
	// fails with MGSNotConfigured).
	MGS *mgs.Set
	// HTTP fetches artifacts given by URL.
	HTTP  *http.Client
	Store *ledger.Store
	// Identity names this worker in the ledger's events.
	Identity string
	// Ledger records attempts; the worker builds it with its Temporal client so an abandoned attempt is released.
	Ledger *LedgerActivities
}

// NewMGSActivities builds the activities from the fleet endpoints.
func NewMGSActivities(ep fleet.Endpoints, hc *http.Client, store *ledger.Store, identity string) *MGSActivities {
	a := &MGSActivities{HTTP: hc, Store: store, Identity: identity}
	if len(ep.MGS) > 0 {
		a.MGS, _ = mgs.NewSet(ep.MGS, hc)
	}
	return a
}

// ArtifactRef is an image to deliver: its version, SHA-256 (hex) and where
// the worker reads it (a local path or an http(s) URL).
type ArtifactRef struct {
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	Path    string `json:"path,omitempty"`
	URL     string `json:"url,omitempty"`
}

func (r ArtifactRef) where() string {
	if r.Path != "" {
		return r.Path
	}
	return r.URL
}

// mgsErr is the one place that turns an MGS client error into a Temporal
// error: unreachable/busy answers stay retryable, 4xx answers and malformed
// replies become non-retryable MGSRejected[:code].
func mgsErr(err error, what string) error {
	if err == nil {
		return nil
	}
	switch mgs.Classify(err) {
	case mgs.ClassTryNextMGS, mgs.ClassBusy, mgs.ClassCanceled:
		return fmt.Errorf("%s: %w", what, err)
	}
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return err
	}
	typ := failure.MGSRejected
	var e *mgs.Error
	if errors.As(err, &e) && e.Code != "" {
		typ += ":" + e.Code
	}
	return temporal.NewNonRetryableApplicationError(what+": "+err.Error(), typ, err)
}

func (a *MGSActivities) set() (*mgs.Set, error) {
	if a.MGS == nil {
		return nil, mgsFatal(failure.MGSNotConfigured, "this worker has no MGS endpoints configured")
	}
	return a.MGS, nil
}

func (a *MGSActivities) identity(ctx context.Context) string {
	if a.Identity != "" {
		return a.Identity
	}
	return activity.GetInfo(ctx).TaskQueue
}

// event appends one step to an attempt's ledger log (idempotent by step).
func (a *MGSActivities) event(ctx context.Context, attempt uuid.UUID, step, state, msg string) {
	if a.Store == nil || attempt == uuid.Nil {
		return
	}
	if err := a.Store.AppendEvent(ctx, ledger.Event{AttemptID: attempt, Step: step, State: state, Message: msg, Worker: a.identity(ctx)}); err != nil {
		activity.GetLogger(ctx).Warn("ledger event failed", "step", step, "error", err)
	}
}

// progressWriter throttles ledger progress writes from polling loops.
type progressWriter struct {
	a       *MGSActivities
	attempt uuid.UUID
	last    time.Time
	phase   string
	done    int64
}

func (p *progressWriter) write(ctx context.Context, phase string, done, total int64, force bool) {
	if p.a.Store == nil || p.attempt == uuid.Nil {
		return
	}
	if !force && phase == p.phase && (done == p.done || time.Since(p.last) < 2*time.Second) {
		return
	}
	if err := p.a.Store.SetProgress(ctx, ledger.Progress{AttemptID: p.attempt, Phase: phase, Done: done, Total: total}); err != nil {
		activity.GetLogger(ctx).Warn("ledger progress failed", "error", err)
		return
	}
	p.phase, p.done, p.last = phase, done, time.Now()
}

func mgsFatal(typ, format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), typ, nil)
}

// --- artifacts ---

func (a *MGSActivities) openArtifact(ctx context.Context, r ArtifactRef) (io.ReadCloser, int64, error) {
	switch {
	case r.Path != "":
		f, err := os.Open(r.Path)
		if err != nil {
			return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s: %v", r.Path, err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s: %v", r.Path, err)
		}
		return f, st.Size(), nil
	case r.URL != "":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
		if err != nil {
			return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s: %v", r.URL, err)
		}
		hc := a.HTTP
		if hc == nil {
			hc = http.DefaultClient
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, 0, fmt.Errorf("fetch artifact %s: %w", r.URL, err) // retryable
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				return nil, 0, fmt.Errorf("fetch artifact %s: HTTP %d", r.URL, resp.StatusCode)
			}
			return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s: HTTP %d", r.URL, resp.StatusCode)
		}
		return resp.Body, resp.ContentLength, nil
	}
	return nil, 0, mgsFatal(failure.ArtifactUnavailable, "artifact %s has neither path nor url", r.Version)
}

// verifyArtifact reads the artifact and checks its SHA-256; it returns the size.
func (a *MGSActivities) verifyArtifact(ctx context.Context, r ArtifactRef) (int64, error) {
	rc, _, err := a.openArtifact(ctx, r)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	sum := sha256.New()
	n, err := io.Copy(sum, heartbeatReader(ctx, rc))
	if err != nil {
		return 0, fmt.Errorf("read artifact %s: %w", r.where(), err)
	}
	got := hex.EncodeToString(sum.Sum(nil))
	if !strings.EqualFold(got, r.SHA256) {
		return 0, mgsFatal(failure.ArtifactMismatch, "artifact %s (version %s): SHA-256 is %s, expected %s", r.where(), r.Version, got, r.SHA256)
	}
	return n, nil
}

// heartbeatReader records a heartbeat (bytes read so far) at most once a second.
func heartbeatReader(ctx context.Context, r io.Reader) io.Reader {
	if !activity.IsActivity(ctx) {
		return r
	}
	return &hbReader{ctx: ctx, r: r}
}

type hbReader struct {
	ctx  context.Context
	r    io.Reader
	n    int64
	last time.Time
}

func (h *hbReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.n += int64(n)
	if time.Since(h.last) > time.Second {
		activity.RecordHeartbeat(h.ctx, h.n)
		h.last = time.Now()
	}
	return n, err
}

// --- precheck ---

// PrecheckInput asks for everything a precheck needs, after verifying the
// artifacts' digests (before anything touches a device).
type PrecheckInput struct {
	SP        mgs.SpIdentifier `json:"sp"`
	Component string           `json:"component"`
	Artifacts []ArtifactRef    `json:"artifacts"`
}

// SlotInfo is one firmware slot as the SP reports it.
type SlotInfo struct {
	Slot uint16 `json:"slot"`
	// Valid: the slot's caboose reads (SP), or its hash does (host boot
	// flash).
	Valid bool `json:"valid"`
	// Version is the caboose version ("" when !Valid; always "" for the
	// host boot flash, which has no caboose).
	Version string `json:"version,omitempty"`
	// SHA256 is the slot's phase 1 hash (host boot flash only).
	SHA256 string `json:"sha256,omitempty"`
}

// PrecheckResult is the SP's identity, its slots and its update status.
type PrecheckResult struct {
	Serial        string           `json:"serial"`
	Model         string           `json:"model"`
	Active        SlotInfo         `json:"active"`
	Inactive      SlotInfo         `json:"inactive"`
	Status        mgs.UpdateStatus `json:"status"`
	ArtifactSizes []int64          `json:"artifactSizes"`
}

// MGSPrecheck verifies the artifacts, then reads the SP's identity, its
// active and inactive slot versions (for host boot flash the active slot
// and both slots' phase 1 hashes) and the component's update status,
// through any MGS.
func (a *MGSActivities) MGSPrecheck(ctx context.Context, in PrecheckInput) (PrecheckResult, error) {
	var out PrecheckResult
	for _, art := range in.Artifacts {
		n, err := a.verifyArtifact(ctx, art)
		if err != nil {
			return out, err
		}
		out.ArtifactSizes = append(out.ArtifactSizes, n)
	}
	set, err := a.set()
	if err != nil {
		return out, err
	}
	st, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.SpState, error) { return c.SpState(ctx, in.SP) })
	if err != nil {
		return out, mgsErr(err, "read SP state")
	}
	out.Serial, out.Model = st.SerialNumber, st.Model
	active, inactive := uint16(0), uint16(1)
	if in.Component == mgs.ComponentHostBootFlash {
		active, err = mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (uint16, error) {
			return c.ActiveSlot(ctx, in.SP, in.Component)
		})
		if err != nil {
			return out, mgsErr(err, "read active host boot flash slot")
		}
		if active > 1 {
			return out, mgsFatal(failure.MGSRejected, "host boot flash active slot %d is not 0 or 1", active)
		}
		inactive = 1 - active
	}
	if in.Component == mgs.ComponentHostBootFlash {
		// The host boot flash has no caboose: each slot is known by the
		// hash of the phase 1 image it holds.
		if out.Active, err = a.hostSlot(ctx, set, in.SP, active); err != nil {
			return out, err
		}
		if out.Inactive, err = a.hostSlot(ctx, set, in.SP, inactive); err != nil {
			return out, err
		}
	} else {
		if out.Active, err = a.slot(ctx, set, in.SP, in.Component, active); err != nil {
			return out, err
		}
		if out.Inactive, err = a.slot(ctx, set, in.SP, in.Component, inactive); err != nil {
			return out, err
		}
	}
	out.Status, err = mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.UpdateStatus, error) {
		return c.UpdateStatus(ctx, in.SP, in.Component)
	})
	return out, mgsErr(err, "read update status")
}

// slot reads a slot's caboose. A slot without a valid image (normal for
// the inactive slot after a reset mid-update) is an answer, not an error:
// today's MGS says so only in a 503's message (mgs.CabooseInvalid).
func (a *MGSActivities) slot(ctx context.Context, set *mgs.Set, sp mgs.SpIdentifier, comp string, slot uint16) (SlotInfo, error) {
	cab, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.Caboose, error) {
		return c.Caboose(ctx, sp, comp, slot)
	})
	if mgs.CabooseInvalid(err) {
		return SlotInfo{Slot: slot}, nil
	}
	if err != nil {
		return SlotInfo{}, mgsErr(err, fmt.Sprintf("read caboose of %s slot %d", comp, slot))
	}
	return SlotInfo{Slot: slot, Valid: true, Version: cab.Version}, nil
}

// hostSlot reads a host boot flash slot by its phase 1 hash.
func (a *MGSActivities) hostSlot(ctx context.Context, set *mgs.Set, sp mgs.SpIdentifier, slot uint16) (SlotInfo, error) {
	sum, err := a.hostSlotHash(ctx, set, sp, slot)
	if err != nil {
		return SlotInfo{}, err
	}
	return SlotInfo{Slot: slot, Valid: true, SHA256: sum}, nil
}

// hostSlotHash asks the SP to hash a host boot flash slot and waits for it.
func (a *MGSActivities) hostSlotHash(ctx context.Context, set *mgs.Set, sp mgs.SpIdentifier, slot uint16) (string, error) {
	deadline := time.Now().Add(2 * time.Minute)
	started := false
	for {
		hs, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.HashStatus, error) {
			return c.HashGet(ctx, sp, mgs.ComponentHostBootFlash, slot)
		})
		if err != nil {
			return "", mgsErr(err, "read host flash slot hash")
		}
		switch hs.Status {
		case mgs.HashHashed:
			return hs.SHA256, nil
		case mgs.HashNotCalculated:
			if started && time.Now().After(deadline) {
				return "", fmt.Errorf("host flash slot %d: hash was never calculated", slot)
			}
			if err := set.Do(ctx, func(ctx context.Context, c *mgs.Client) error {
				return c.HashStart(ctx, sp, mgs.ComponentHostBootFlash, slot)
			}); err != nil {
				return "", mgsErr(err, "start host flash slot hash")
			}
			started = true
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("host flash slot %d: hashing did not finish within 2m", slot)
		}
		activity.RecordHeartbeat(ctx, "hashing")
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return "", err
		}
	}
}

// --- ledger ---

// MGSRecordAttempt writes attempt transitions to the ledger (idempotent).
func (a *MGSActivities) MGSRecordAttempt(ctx context.Context, in RecordAttemptInput) error {
	la := a.Ledger
	if la == nil { // tests without Temporal: no abandoned attempt can be released
		la = &LedgerActivities{Store: a.Store, Identity: a.Identity}
	}
	return la.RecordAttempt(ctx, in)
}
