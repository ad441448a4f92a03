package mgsupdate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/apiversion"
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
	Ledger *activities.LedgerActivities
	// Phase2UploadStall, when set, replaces phase2UploadStallTimeout: a
	// test's worker shortens it to drive a stalled upload in seconds.
	// Zero (every real worker) keeps it.
	Phase2UploadStall time.Duration
	// ArtifactRoot is the only directory path artifacts are read from
	// (--artifact-root; empty: none are).
	ArtifactRoot string
	// artifactStall replaces artifactStallTimeout in tests (0: the constant).
	artifactStall time.Duration
	// owner finds a pending Nexus MGS update for a device (zero: none known).
	owner ownerLookup
	// sleds finds a host's sled-agent and its config's owner.
	sleds sledLookup
}

// NewMGSActivities builds the activities from the fleet endpoints.
func NewMGSActivities(ep fleet.Endpoints, hc *http.Client, store *ledger.Store, identity string) *MGSActivities {
	a := &MGSActivities{HTTP: hc, Store: store, Identity: identity, owner: newOwnerLookup(ep, hc), sleds: newSledLookup(ep, hc)}
	if len(ep.MGS) > 0 {
		a.MGS, _ = mgs.NewSet(ep.MGS, hc)
	}
	return a
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
	if apiversion.IsRefused(err) {
		// No cause: its text is the message already (one clear message).
		return temporal.NewNonRetryableApplicationError(what+": "+err.Error(), failure.APIVersionRefused, nil)
	}
	typ := failure.MGSRejected
	if e := (*mgs.Error)(nil); errors.As(err, &e) {
		typ = failure.WithCode(typ, e.Code)
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
	// tenths tells the workflow at each tenth of the way (the ledger
	// row is for starter status; the workflow's query and current
	// details hear of the step only through this).
	tenths activities.ProgressReporter
}

func (p *progressWriter) write(ctx context.Context, phase string, done, total int64, force bool) {
	if p.tenths.AttemptID == uuid.Nil {
		p.tenths.AttemptID = p.attempt
	}
	p.tenths.Report(ctx, done, total)
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

// --- ledger ---

// MGSRecordAttempt writes attempt transitions to the ledger (idempotent).
func (a *MGSActivities) MGSRecordAttempt(ctx context.Context, in activities.RecordAttemptInput) error {
	la := a.Ledger
	if la == nil { // tests without Temporal: no abandoned attempt can be released
		la = &activities.LedgerActivities{Store: a.Store, Identity: a.Identity}
	}
	return la.RecordAttempt(ctx, in)
}
