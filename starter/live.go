package main

import (
	"context"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// A workflow learns a device's progress only at its checkpoints; between
// them the live figures are in the ledger (written every few seconds by the
// activity that polls the device) and in that activity's heartbeat (sent to
// Temporal at most every 0.8 × its heartbeat timeout). currentProgress
// brings the workflow's answer up to date from the freshest of them.

// liveLedger opens the ledger for live progress, or returns nil: it is a
// bonus to watching, never a reason to fail.
func liveLedger(ctx context.Context, dbURL string) *ledger.Store {
	if dbURL == "" {
		return nil
	}
	store, err := ledger.Open(ctx, dbURL)
	if err != nil {
		return nil
	}
	if err := store.DB().PingContext(ctx); err != nil {
		store.Close()
		return nil
	}
	return store
}

// liveBytes is the part of a device activity's heartbeat that counts
// progress: activities.WaitHeartbeat, which the MGS delivery wait and the
// host's phase 2 fetch both send.
type liveBytes struct {
	Done  int64 `json:"done"`
	Total int64 `json:"total"`
}

// currentProgress is the workflow's progress query answer with live
// progress from the ledger (store may be nil) or the running activity.
func currentProgress(ctx context.Context, c client.Client, store *ledger.Store, id, runID string) (workflows.Progress, error) {
	p, err := queryProgress(ctx, c, id, runID)
	if err != nil || (p.State != workflows.StateRunning && p.State != workflows.StatePaused) {
		return p, err
	}
	if live, ok := ledgerProgress(ctx, store, id); ok {
		return apply(p, live), nil
	}
	if live, ok := heartbeatProgress(ctx, c, id, runID); ok {
		return apply(p, live), nil
	}
	return p, nil
}

func apply(p workflows.Progress, live liveBytes) workflows.Progress {
	p.Done, p.Total = live.Done, live.Total
	if p.Unit == "" {
		p.Unit = "bytes"
	}
	return p
}

func usable(l liveBytes) bool { return l.Total > 0 && l.Done >= 0 && l.Done <= l.Total }

// ledgerProgress is the progress of the update's active attempt.
func ledgerProgress(ctx context.Context, store *ledger.Store, id string) (liveBytes, bool) {
	if store == nil {
		return liveBytes{}, false
	}
	attempts, err := store.Attempts(ctx, id)
	if err != nil {
		return liveBytes{}, false
	}
	for i := len(attempts) - 1; i >= 0; i-- {
		at := attempts[i]
		if at.State == ledger.StatePending || at.State == ledger.StateRunning {
			l := liveBytes{Done: at.Done, Total: at.Total}
			return l, usable(l)
		}
	}
	return liveBytes{}, false
}

// heartbeatProgress is what the workflow's running activity last
// heartbeated, where that counts progress.
func heartbeatProgress(ctx context.Context, c client.Client, id, runID string) (liveBytes, bool) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, runID)
	if err != nil {
		return liveBytes{}, false
	}
	for _, act := range desc.GetPendingActivities() {
		var l liveBytes
		if d := act.GetHeartbeatDetails(); d != nil && converter.GetDefaultDataConverter().FromPayloads(d, &l) == nil && usable(l) {
			return l, true
		}
	}
	return liveBytes{}, false
}
