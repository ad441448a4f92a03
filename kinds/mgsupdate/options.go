package mgsupdate

import (
	"fmt"
	"time"

	"github.com/fleetsaga/fleetsaga/workflows"
	"go.temporal.io/sdk/workflow"
)

// The bounds of the driver's activities, each with the reason for its
// value. A step's own wait on the device is bounded by MGSTiming; these
// bound the activity around it, and its retries.
const (
	// shortStepTimeout bounds one try of a short step (a precheck, a
	// question to the SP): a handful of MGS requests, each bounded by the
	// fleet.RequestTimeout and tried on each MGS in turn.
	shortStepTimeout = 15 * time.Minute
	// shortStepRetryBudget bounds a short step with its retries: an MGS
	// restart or its sled's reboot is over well within it; past it the
	// update fails and says why instead of waiting blind.
	shortStepRetryBudget = 30 * time.Minute
	// localReadTimeout bounds one try of a read run as a local activity
	// (SP firmware's precheck): a few reads and the digest of an SP image
	// of about 1 MiB, inside the workflow task that goes on to start.
	localReadTimeout = 2 * time.Minute
	// longStepMargin is added to a long step's own bound for one try: the
	// requests around its wait and a slow worker.
	longStepMargin = 10 * time.Minute
	// longStepTries and longStepOutage bound a long step with its
	// retries: a few tries of its full length (a worker lost mid-wait
	// resumes on another) plus an hour of MGS being unreachable.
	longStepTries  = 4
	longStepOutage = time.Hour
	// startBound bounds sending an image: up to 64 MiB (a host phase 1)
	// to MGS, which answers once the SP has prepared (erased) its slot,
	// and, while the SP updates its other component, the wait for that
	// (the SP takes one at a time); a retry goes on waiting.
	startBound = 15 * time.Minute
	// abortTimeout and abortRetryBudget: an abort is one request per MGS.
	// A compensation that cannot reach MGS gives up within minutes, so the
	// ending is not held: it says the abort failed, and the next update
	// of the SP finds ours and waits it out or takes it over.
	abortTimeout     = time.Minute
	abortRetryBudget = 5 * time.Minute
	// waitLegFactor: one leg of a wait is bounded by this many times the
	// progress and takeover timeouts together (2 h by default), so an
	// update that keeps moving is never cut short; the activity's own
	// stuck and takeover detection ends a leg that does not.
	waitLegFactor = 6
	// resetTries: the SP's post-update waits up to NewVersionTimeout after
	// each reset; a lost reply costs a re-check and another reset. Room
	// for a few.
	resetTries = 4
)

// shortOpts and longOpts set a step's options; step names it in the Web
// UI's timeline ("reset SP sled 14").
func (u *mgsUpdate) shortOpts(ctx workflow.Context, step string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    shortStepTimeout,
		ScheduleToCloseTimeout: shortStepRetryBudget,
		// A short step heartbeats between its requests; during one that
		// takes the whole fleet.RequestTimeout the worker beats for it.
		HeartbeatTimeout: 2 * u.timing.HeartbeatTimeout,
		RetryPolicy:      workflows.DeviceRetry,
		Summary:          u.summary(step),
	})
}

// longOpts: bound is the step's own wait on the device.
func (u *mgsUpdate) longOpts(ctx workflow.Context, bound time.Duration, step string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    bound + longStepMargin,
		ScheduleToCloseTimeout: longStepTries*bound + longStepOutage,
		HeartbeatTimeout:       u.timing.HeartbeatTimeout,
		RetryPolicy:            workflows.DeviceRetry,
		Summary:                u.summary(step),
	})
}

func (u *mgsUpdate) localReadOpts(step string) workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		StartToCloseTimeout: localReadTimeout, ScheduleToCloseTimeout: shortStepRetryBudget, RetryPolicy: workflows.DeviceRetry,
		Summary: u.summary(step),
	}
}

func (u *mgsUpdate) abortOpts(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: abortTimeout, ScheduleToCloseTimeout: abortRetryBudget, RetryPolicy: workflows.DeviceRetry,
	})
}

func (u *mgsUpdate) summary(step string) string {
	return fmt.Sprintf("%s: %s of SP %s %d", step, u.component, u.sp.Type, u.sp.Slot)
}
