// Package activities holds every piece of I/O fleetsaga's workflows do: one
// struct per domain holding its injected clients and the ledger store.
package activities

import (
	"context"
	"errors"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// ErrTypeTargetBusy is the application error type for a target that already
// has an active update in the ledger.
const ErrTypeTargetBusy = "TargetBusy"

// LedgerActivities write the ledger on behalf of workflows.
type LedgerActivities struct {
	Store *ledger.Store
	// Identity names this worker in the event log.
	Identity string
}

// RecordIntent writes an attempt before any device is touched. A target that
// is busy with another update is a non-retryable TargetBusy error.
func (a *LedgerActivities) RecordIntent(ctx context.Context, at ledger.Attempt) error {
	err := a.Store.RecordIntent(ctx, at)
	var busy *ledger.ErrTargetBusy
	if errors.As(err, &busy) {
		return temporal.NewNonRetryableApplicationError(busy.Error(), ErrTypeTargetBusy, nil, busy.UpdateID)
	}
	if err != nil {
		return err
	}
	return a.Store.AppendEvent(ctx, ledger.Event{AttemptID: at.ID, Step: "intent", State: string(ledger.StatePending),
		Message: "attempt recorded for " + at.Target, Worker: a.identity(ctx)})
}

// SetProgress records phase and progress.
func (a *LedgerActivities) SetProgress(ctx context.Context, p ledger.Progress) error {
	return a.Store.SetProgress(ctx, p)
}

// FinishAttempt ends an attempt and logs the ending as an event.
func (a *LedgerActivities) FinishAttempt(ctx context.Context, f ledger.Finish) error {
	if err := a.Store.FinishAttempt(ctx, f); err != nil {
		return err
	}
	msg := f.Outcome
	if f.Error != "" {
		msg = f.Outcome + ": " + f.Error
	}
	return a.Store.AppendEvent(ctx, ledger.Event{AttemptID: f.AttemptID, Step: "finish", State: string(f.State),
		Message: msg, Worker: a.identity(ctx)})
}

// AppendEvent adds one step to an attempt's event log.
func (a *LedgerActivities) AppendEvent(ctx context.Context, e ledger.Event) error {
	if e.Worker == "" {
		e.Worker = a.identity(ctx)
	}
	return a.Store.AppendEvent(ctx, e)
}

func (a *LedgerActivities) identity(ctx context.Context) string {
	if a.Identity != "" {
		return a.Identity
	}
	if activity.IsActivity(ctx) {
		return activity.GetInfo(ctx).TaskQueue
	}
	return ""
}
