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
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// Non-retryable error types of the MGS activities (and of the SP firmware
// and host flash workflows); callers and tests match on them.
const (
	ErrTypeArtifactUnavailable   = "ArtifactUnavailable"    // cannot read the artifact file/URL
	ErrTypeArtifactMismatch      = "ArtifactDigestMismatch" // SHA-256 differs from the expected one
	ErrTypeMGSNotConfigured      = "MGSNotConfigured"
	ErrTypeMGSRejected           = "MGSRejected" // a 4xx answer or a malformed reply (type suffix ":<error_code>")
	ErrTypeHostBootTimeout       = "HostBootTimeout"
	ErrTypeHostPhase2Unavailable = "HostPhase2Unavailable" // no MGS accepted the phase 2 image
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
	typ := ErrTypeMGSRejected
	var e *mgs.Error
	if errors.As(err, &e) && e.Code != "" {
		typ += ":" + e.Code
	}
	return temporal.NewNonRetryableApplicationError(what+": "+err.Error(), typ, err)
}

func (a *MGSActivities) set() (*mgs.Set, error) {
	if a.MGS == nil {
		return nil, mgsFatal(ErrTypeMGSNotConfigured, "this worker has no MGS endpoints configured")
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
			return nil, 0, mgsFatal(ErrTypeArtifactUnavailable, "artifact %s: %v", r.Path, err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, 0, mgsFatal(ErrTypeArtifactUnavailable, "artifact %s: %v", r.Path, err)
		}
		return f, st.Size(), nil
	case r.URL != "":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
		if err != nil {
			return nil, 0, mgsFatal(ErrTypeArtifactUnavailable, "artifact %s: %v", r.URL, err)
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
			return nil, 0, mgsFatal(ErrTypeArtifactUnavailable, "artifact %s: HTTP %d", r.URL, resp.StatusCode)
		}
		return resp.Body, resp.ContentLength, nil
	}
	return nil, 0, mgsFatal(ErrTypeArtifactUnavailable, "artifact %s has neither path nor url", r.Version)
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
		return 0, mgsFatal(ErrTypeArtifactMismatch, "artifact %s (version %s): SHA-256 is %s, expected %s", r.where(), r.Version, got, r.SHA256)
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
			return out, mgsFatal(ErrTypeMGSRejected, "host boot flash active slot %d is not 0 or 1", active)
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

// RecordAttemptInput ends the previous attempt (if any) and writes the next
// attempt's intent (if any), in that order, so the target never has two
// active attempts.
type RecordAttemptInput struct {
	Finish *ledger.Finish  `json:"finish,omitempty"`
	Next   *ledger.Attempt `json:"next,omitempty"`
	// FinishNext ends Next at once (an update that never touched the
	// device: no change needed, or a failed precheck).
	FinishNext *ledger.Finish `json:"finishNext,omitempty"`
}

// MGSRecordAttempt writes attempt transitions to the ledger (idempotent).
func (a *MGSActivities) MGSRecordAttempt(ctx context.Context, in RecordAttemptInput) error {
	la := &LedgerActivities{Store: a.Store, Identity: a.Identity}
	if in.Finish != nil {
		if err := la.FinishAttempt(ctx, *in.Finish); err != nil {
			return err
		}
	}
	if in.Next != nil {
		if err := la.RecordIntent(ctx, *in.Next); err != nil {
			return err
		}
	}
	if in.FinishNext != nil {
		return la.FinishAttempt(ctx, *in.FinishNext)
	}
	return nil
}

// --- start ---

// StartUpdateInput starts one attempt: the update ID is the attempt's UUID
// (already in the ledger).
type StartUpdateInput struct {
	SP           mgs.SpIdentifier `json:"sp"`
	Component    string           `json:"component"`
	FirmwareSlot uint16           `json:"firmwareSlot"`
	UpdateID     uuid.UUID        `json:"updateId"`
	Artifact     ArtifactRef      `json:"artifact"`
	// PollInterval paces retries while the SP updates another component.
	PollInterval time.Duration `json:"pollInterval"`
}

// StartUpdateResult says whether our update started, or who is busy.
type StartUpdateResult struct {
	Started bool   `json:"started"`
	MGS     string `json:"mgs,omitempty"`
	// Busy: another update holds the SP; Current is its status.
	Busy    bool             `json:"busy"`
	Current mgs.UpdateStatus `json:"current"`
}

// MGSStartUpdate sends the image through any reachable MGS (failing over on
// transport errors). A retry after a lost reply finds our ID on the SP and
// does not send it again. 503 UpdateInProgress for someone else's update
// is not an error: the result says Busy.
func (a *MGSActivities) MGSStartUpdate(ctx context.Context, in StartUpdateInput) (StartUpdateResult, error) {
	var out StartUpdateResult
	set, err := a.set()
	if err != nil {
		return out, err
	}
	status := func() (mgs.UpdateStatus, error) {
		return mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.UpdateStatus, error) {
			return c.UpdateStatus(ctx, in.SP, in.Component)
		})
	}
	cur, err := status()
	if err != nil {
		return out, mgsErr(err, "read update status")
	}
	if cur.State != mgs.UpdateNone && cur.ID == in.UpdateID {
		out.Started, out.Current = true, cur
		return out, nil
	}
	if in.PollInterval <= 0 {
		in.PollInterval = 3 * time.Second
	}
	var mu sync.Mutex
	var digest string
	send := func() (*mgs.Client, error) {
		_, c, err := mgs.TryAllFrom(ctx, set, func(ctx context.Context, c *mgs.Client) (struct{}, error) {
			rc, size, err := a.openArtifact(ctx, in.Artifact)
			if err != nil {
				return struct{}{}, err
			}
			defer rc.Close()
			sum := sha256.New()
			err = c.UpdateStart(ctx, in.SP, in.Component, in.UpdateID, in.FirmwareSlot,
				io.TeeReader(heartbeatReader(ctx, rc), sum), size)
			mu.Lock()
			digest = hex.EncodeToString(sum.Sum(nil))
			mu.Unlock()
			return struct{}{}, err
		})
		return c, err
	}
	c, err := send()
	// Today's MGS answers an SP refusal (another component updating, say)
	// with an ambiguous 503: the SP's state decides what it meant.
	for mgs.Ambiguous(err) {
		cur, serr := status()
		if serr != nil {
			return out, mgsErr(serr, "read update status after an ambiguous start")
		}
		switch mgs.StartVerdict(cur, in.UpdateID) {
		case mgs.VerdictOurs:
			out.Started, out.Current = true, cur
			a.event(ctx, in.UpdateID, "start", string(ledger.StateRunning), "update "+in.UpdateID.String()+" found on the SP after an ambiguous answer")
			return out, nil
		case mgs.VerdictBusy:
			out.Busy, out.Current = true, cur
			return out, nil
		}
		other, berr := a.otherComponentBusy(ctx, set, in.SP, in.Component)
		if berr != nil {
			return out, berr
		}
		if other == "" {
			return out, mgsErr(err, "start update") // transient: retried
		}
		// The SP updates another component (one at a time): wait here,
		// with heartbeats, rather than in the workflow.
		activity.RecordHeartbeat(ctx, WaitHeartbeat{State: "other-component-busy: " + other})
		if err := sleepCtx(ctx, in.PollInterval); err != nil {
			return out, err
		}
		c, err = send()
	}
	switch {
	case err == nil:
		if !strings.EqualFold(digest, in.Artifact.SHA256) {
			// The file changed after it was verified: take it back.
			_ = set.Do(ctx, func(ctx context.Context, c *mgs.Client) error {
				return c.UpdateAbort(ctx, in.SP, in.Component, in.UpdateID)
			})
			return out, mgsFatal(ErrTypeArtifactMismatch, "artifact %s changed while it was sent: SHA-256 %s, expected %s", in.Artifact.where(), digest, in.Artifact.SHA256)
		}
		out.Started, out.MGS = true, c.BaseURL()
		a.event(ctx, in.UpdateID, "start", string(ledger.StateRunning), "update "+in.UpdateID.String()+" accepted by "+c.BaseURL())
		pw := progressWriter{a: a, attempt: in.UpdateID}
		pw.write(ctx, "updating", 0, 0, true)
		return out, nil
	case mgs.Classify(err) == mgs.ClassBusy:
		cur, serr := status()
		if serr != nil {
			return out, mgsErr(serr, "read update status")
		}
		if cur.State != mgs.UpdateNone && cur.ID == in.UpdateID {
			out.Started, out.Current = true, cur
			return out, nil
		}
		out.Busy, out.Current = true, cur
		return out, nil
	}
	return out, mgsErr(err, "start update")
}

// otherComponentBusy names the other component whose update the SP is
// working on ("" if none): the SP takes one component at a time.
func (a *MGSActivities) otherComponentBusy(ctx context.Context, set *mgs.Set, sp mgs.SpIdentifier, comp string) (string, error) {
	for _, other := range []string{mgs.ComponentSP, mgs.ComponentHostBootFlash} {
		if other == comp || (sp.Type != mgs.SpTypeSled && other == mgs.ComponentHostBootFlash) {
			continue
		}
		st, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.UpdateStatus, error) {
			return c.UpdateStatus(ctx, sp, other)
		})
		if err != nil {
			return "", mgsErr(err, "read "+other+" update status")
		}
		if st.InProgress() {
			return other, nil
		}
	}
	return "", nil
}

// abortUpdate aborts update id and says what came of it. MGS answers an
// abort the SP refused (too late, another ID) with an ambiguous 503, so
// the SP's status, re-read, decides; an abort that did not take is
// retried.
func abortUpdate(ctx context.Context, set *mgs.Set, sp mgs.SpIdentifier, comp string, id uuid.UUID) (string, error) {
	err := set.Do(ctx, func(ctx context.Context, c *mgs.Client) error { return c.UpdateAbort(ctx, sp, comp, id) })
	if err == nil {
		// Success also means "nothing of yours was in progress": say which.
		st, serr := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.UpdateStatus, error) {
			return c.UpdateStatus(ctx, sp, comp)
		})
		if serr == nil && mgs.AbortVerdict(st, id) == mgs.VerdictNotCurrent {
			return AbortNotCurrent, nil
		}
		return AbortDone, nil
	}
	if cl := mgs.Classify(err); cl == mgs.ClassFatal || cl == mgs.ClassCanceled {
		return "", mgsErr(err, "abort update "+id.String())
	}
	st, serr := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.UpdateStatus, error) {
		return c.UpdateStatus(ctx, sp, comp)
	})
	if serr != nil {
		return "", mgsErr(serr, "read update status after aborting "+id.String())
	}
	switch mgs.AbortVerdict(st, id) {
	case mgs.VerdictAborted:
		return AbortDone, nil
	case mgs.VerdictTooLate:
		return AbortTooLate, nil
	case mgs.VerdictNotCurrent:
		return AbortNotCurrent, nil
	}
	return "", mgsErr(err, "abort update "+id.String()+" (the SP still reports "+st.String()+")")
}

// --- wait ---

// Wait outcomes.
const (
	WaitComplete    = "complete"      // complete{watched id}
	WaitLost        = "lost"          // ours vanished: the SP was reset (status none)
	WaitReplaced    = "replaced"      // the SP now reports another update ID
	WaitFailed      = "failed"        // failed{ours}: aborted by the activity
	WaitAborted     = "aborted"       // aborted{ours} by someone
	WaitStuck       = "stuck"         // no progress within ProgressTimeout: aborted by the activity
	WaitCheckpoint  = "checkpoint"    // still running; progress report for the workflow
	WaitFree        = "free"          // the foreign update ended without activation; the SP is free
	WaitForeignDone = "foreign_reset" // the foreign update completed and someone reset the SP
	WaitTakeover    = "takeover_due"  // the foreign update completed and nobody reset it in time
)

// WaitUpdateInput watches one update (ours, or a foreign one).
type WaitUpdateInput struct {
	SP        mgs.SpIdentifier `json:"sp"`
	Component string           `json:"component"`
	UpdateID  uuid.UUID        `json:"updateId"`
	Ours      bool             `json:"ours"`
	// AttemptID is our ledger attempt (progress is written to it).
	AttemptID       uuid.UUID     `json:"attemptId"`
	PollInterval    time.Duration `json:"pollInterval"`
	ProgressTimeout time.Duration `json:"progressTimeout"`
	TakeoverTimeout time.Duration `json:"takeoverTimeout"`
	// CheckpointEvery makes the activity return a checkpoint so the
	// workflow can show progress (0: never). Keep it coarse.
	CheckpointEvery time.Duration `json:"checkpointEvery"`
	// Carried across checkpoints.
	LastBytes     int64     `json:"lastBytes"`
	LastChange    time.Time `json:"lastChange"`
	CompleteSince time.Time `json:"completeSince"`
}

// WaitUpdateResult is how the watched update ended (or a checkpoint).
type WaitUpdateResult struct {
	Outcome       string           `json:"outcome"`
	Status        mgs.UpdateStatus `json:"status"`
	Bytes         int64            `json:"bytes"`
	Total         int64            `json:"total"`
	LastBytes     int64            `json:"lastBytes"`
	LastChange    time.Time        `json:"lastChange"`
	CompleteSince time.Time        `json:"completeSince"`
}

// WaitHeartbeat is the heartbeat detail of the polling activities.
type WaitHeartbeat struct {
	State string `json:"state"`
	Done  int64  `json:"done"`
	Total int64  `json:"total"`
}

// MGSWaitUpdate polls the SP's update status through any MGS until the
// watched update ends, in one heartbeating activity (no history event per
// poll). For our update: complete, lost (none), replaced, failed (aborted
// here), aborted, or stuck (no progress within ProgressTimeout: aborted
// here). For a foreign update: free, foreign_reset, takeover_due (complete
// and nobody reset it within TakeoverTimeout), replaced, or stuck (aborted
// here).
func (a *MGSActivities) MGSWaitUpdate(ctx context.Context, in WaitUpdateInput) (WaitUpdateResult, error) {
	out := WaitUpdateResult{LastBytes: in.LastBytes, LastChange: in.LastChange, CompleteSince: in.CompleteSince}
	set, err := a.set()
	if err != nil {
		return out, err
	}
	if in.PollInterval <= 0 {
		in.PollInterval = 3 * time.Second
	}
	if out.LastChange.IsZero() {
		out.LastChange = time.Now()
	}
	began := time.Now()
	startBytes := in.LastBytes
	pw := progressWriter{a: a, attempt: in.AttemptID}
	phase := "updating"
	if !in.Ours {
		phase = "waiting-for-concurrent-update"
	}
	abort := func(id uuid.UUID) error {
		_, err := abortUpdate(ctx, set, in.SP, in.Component, id)
		return err
	}
	for {
		st, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.UpdateStatus, error) {
			return c.UpdateStatus(ctx, in.SP, in.Component)
		})
		now := time.Now()
		switch {
		case err != nil && mgs.Classify(err) == mgs.ClassFatal:
			return out, mgsErr(err, "read update status")
		case err != nil:
			// Unreachable (the SP may be rebooting): keep polling, but that
			// is no progress either.
			activity.RecordHeartbeat(ctx, WaitHeartbeat{State: "unreachable", Done: out.Bytes, Total: out.Total})
			if now.Sub(out.LastChange) > in.ProgressTimeout && in.ProgressTimeout > 0 {
				return out, fmt.Errorf("SP %s unreachable through every MGS for %s: %w", in.SP, in.ProgressTimeout, err)
			}
		default:
			out.Status = st
			if st.State == mgs.UpdateNone {
				if !in.Ours && !out.CompleteSince.IsZero() {
					out.Outcome = WaitForeignDone
				} else if in.Ours {
					out.Outcome = WaitLost
				} else {
					out.Outcome = WaitFree
				}
				return out, nil
			}
			if st.ID != in.UpdateID {
				out.Outcome = WaitReplaced
				return out, nil
			}
			progress := int64(st.BytesReceived)
			if st.State == mgs.UpdatePreparing && st.Progress != nil {
				progress = int64(st.Progress.Current) - int64(st.Progress.Total) // erase progress also counts
			}
			if progress != out.LastBytes {
				out.LastBytes, out.LastChange = progress, now
			}
			out.Bytes, out.Total = int64(st.BytesReceived), int64(st.TotalBytes)
			switch st.State {
			case mgs.UpdateComplete:
				if in.Ours || in.Component != mgs.ComponentSP {
					if in.Ours {
						out.Outcome = WaitComplete
						out.Bytes = out.Total
						pw.write(ctx, phase, out.Total, out.Total, true)
					} else {
						out.Outcome = WaitFree // host flash: a complete update does not block a new one
					}
					return out, nil
				}
				if out.CompleteSince.IsZero() {
					out.CompleteSince = now
				}
				if now.Sub(out.CompleteSince) > in.TakeoverTimeout {
					out.Outcome = WaitTakeover
					return out, nil
				}
			case mgs.UpdateFailed, mgs.UpdateRotError:
				if err := abort(st.ID); err != nil {
					return out, err
				}
				out.Outcome = WaitFailed
				if !in.Ours {
					out.Outcome = WaitFree
				}
				return out, nil
			case mgs.UpdateAborted:
				out.Outcome = WaitAborted
				if !in.Ours {
					out.Outcome = WaitFree
				}
				return out, nil
			case mgs.UpdatePreparing, mgs.UpdateInProgress:
				if in.ProgressTimeout > 0 && now.Sub(out.LastChange) > in.ProgressTimeout {
					if err := abort(st.ID); err != nil {
						return out, err
					}
					out.Outcome = WaitStuck
					return out, nil
				}
				if in.CheckpointEvery > 0 && now.Sub(began) >= in.CheckpointEvery && out.LastBytes != startBytes {
					out.Outcome = WaitCheckpoint
					return out, nil
				}
			}
			activity.RecordHeartbeat(ctx, WaitHeartbeat{State: string(st.State), Done: out.Bytes, Total: out.Total})
			if in.Ours {
				pw.write(ctx, phase, out.Bytes, out.Total, false)
			}
		}
		if err := sleepCtx(ctx, in.PollInterval); err != nil {
			return out, err
		}
	}
}

// AbortInput aborts one update by ID.
type AbortInput struct {
	SP        mgs.SpIdentifier `json:"sp"`
	Component string           `json:"component"`
	UpdateID  uuid.UUID        `json:"updateId"`
	AttemptID uuid.UUID        `json:"attemptId"`
	Reason    string           `json:"reason"`
}

// Abort results.
const (
	AbortDone       = "aborted"          // the SP aborted it (or had already)
	AbortNotCurrent = "not_current"      // the SP has no such update in progress (reset, replaced)
	AbortTooLate    = "already_complete" // it completed: too late to abort
)

// MGSAbortUpdate aborts an update if it is the SP's current one. "Not
// current" and "already complete" are answers, not errors: they are read
// from the SP's status when MGS's answer is ambiguous.
func (a *MGSActivities) MGSAbortUpdate(ctx context.Context, in AbortInput) (string, error) {
	set, err := a.set()
	if err != nil {
		return "", err
	}
	res, err := abortUpdate(ctx, set, in.SP, in.Component, in.UpdateID)
	if err != nil {
		return "", err
	}
	a.event(ctx, in.AttemptID, "abort:"+in.UpdateID.String(), "", fmt.Sprintf("abort %s (%s): %s", in.UpdateID, in.Reason, res))
	return res, nil
}

// --- SP post-update ---

// PostUpdateInput resets the SP to activate a completed update.
type PostUpdateInput struct {
	SP mgs.SpIdentifier `json:"sp"`
	// UpdateID is the completed update to activate (ours, or a foreign one
	// being taken over).
	UpdateID      uuid.UUID `json:"updateId"`
	AttemptID     uuid.UUID `json:"attemptId"`
	TargetVersion string    `json:"targetVersion"`
	// ResetRetryInterval is the wait before re-checking and resetting again
	// after a reset whose reply was lost.
	ResetRetryInterval time.Duration `json:"resetRetryInterval"`
	// NewVersionTimeout bounds the wait for the SP to report TargetVersion
	// after a reset.
	NewVersionTimeout time.Duration `json:"newVersionTimeout"`
	PollInterval      time.Duration `json:"pollInterval"`
}

// Post-update outcomes.
const (
	PostActivated    = "activated"     // the SP runs TargetVersion
	PostNotActivated = "not_activated" // the update is gone and the SP runs something else
)

// PostUpdateResult says whether the new version is active.
type PostUpdateResult struct {
	Outcome string `json:"outcome"`
	Active  string `json:"active"`
	Resets  int    `json:"resets"`
}

// SPPostUpdate resets the SP (through another MGS when one refuses to
// reset its own sled's SP) and waits for the new active version. Before
// every reset it re-checks: a reset whose reply was lost but which
// happened is never repeated.
func (a *MGSActivities) SPPostUpdate(ctx context.Context, in PostUpdateInput) (PostUpdateResult, error) {
	var out PostUpdateResult
	set, err := a.set()
	if err != nil {
		return out, err
	}
	if in.PollInterval <= 0 {
		in.PollInterval = time.Second
	}
	deadline := time.Now().Add(in.NewVersionTimeout)
	for {
		activity.RecordHeartbeat(ctx, out)
		cab, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.Caboose, error) {
			return c.Caboose(ctx, in.SP, mgs.ComponentSP, 0)
		})
		if err == nil {
			out.Active = cab.Version
			if cab.Version == in.TargetVersion {
				out.Outcome = PostActivated
				a.event(ctx, in.AttemptID, "activated", "", fmt.Sprintf("SP %s runs %s after %d reset(s) by this attempt", in.SP, cab.Version, out.Resets))
				return out, nil
			}
		} else if mgs.Classify(err) == mgs.ClassFatal {
			return out, mgsErr(err, "read active SP version")
		}
		if err != nil {
			// The SP is not answering (rebooting): wait for it.
			if time.Now().After(deadline) {
				return out, fmt.Errorf("SP %s did not come back with version %s within %s: %w", in.SP, in.TargetVersion, in.NewVersionTimeout, err)
			}
			if err := sleepCtx(ctx, in.PollInterval); err != nil {
				return out, err
			}
			continue
		}
		st, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.UpdateStatus, error) {
			return c.UpdateStatus(ctx, in.SP, mgs.ComponentSP)
		})
		if err != nil {
			if mgs.Classify(err) == mgs.ClassFatal {
				return out, mgsErr(err, "read update status")
			}
			if err := sleepCtx(ctx, in.PollInterval); err != nil {
				return out, err
			}
			continue
		}
		if st.State != mgs.UpdateComplete || st.ID != in.UpdateID {
			// Nothing left to activate: the SP was reset (by us or
			// someone) and runs another version.
			out.Outcome = PostNotActivated
			a.event(ctx, in.AttemptID, "not-activated", "", fmt.Sprintf("SP %s runs %s; update %s is no longer complete (%s)", in.SP, out.Active, in.UpdateID, st))
			return out, nil
		}
		err = resetOnce(ctx, set, in.SP)
		out.Resets++
		switch {
		case err == nil:
			a.event(ctx, in.AttemptID, fmt.Sprintf("reset-%d", out.Resets), "", "SP reset to activate "+in.UpdateID.String())
			deadline = time.Now().Add(in.NewVersionTimeout)
		case mgs.Classify(err) == mgs.ClassFatal:
			return out, mgsErr(err, "reset SP")
		default:
			// The reset may or may not have happened (lost reply, MGS down).
			// Wait, then re-check before resetting again.
			a.event(ctx, in.AttemptID, fmt.Sprintf("reset-%d", out.Resets), "", "reset reply lost: "+err.Error())
			if err := sleepCtx(ctx, in.ResetRetryInterval); err != nil {
				return out, err
			}
			deadline = time.Now().Add(in.NewVersionTimeout)
		}
	}
}

// resetOnce asks the MGS instances in turn to reset the SP, moving on only
// when an instance certainly did not do it (it refused to reset its own
// sled's SP, or answered that it is unavailable). A transport error may
// hide a reset that happened: it is returned at once, so the caller
// re-checks before resetting again instead of resetting through the next
// MGS.
func resetOnce(ctx context.Context, set *mgs.Set, sp mgs.SpIdentifier) error {
	var err error
	for _, c := range set.Clients() {
		err = c.Reset(ctx, sp, mgs.ComponentSP)
		if err == nil || mgs.Classify(err) != mgs.ClassTryNextMGS || mgs.StatusOf(err) == 0 {
			return err
		}
	}
	return err
}
