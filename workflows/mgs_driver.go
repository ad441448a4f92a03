package workflows

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// mgsUpdate is the MGS update driver the two MGS kinds share: attempts
// with workflow-generated UUIDs written to the ledger before the device
// sees them (mgs_attempts.go), the device steps (mgs_steps.go), and one
// ending through the shared lifecycle. Each kind's workflow keeps only the
// order of its steps.
type mgsUpdate struct {
	*lifecycle

	kind      Kind
	target    string
	sp        mgs.SpIdentifier
	component string
	artifact  Artifact
	timing    MGSTiming

	report MGSProgress
	result MGSUpdateResult

	// attempts is the number of the current attempt (its intent written
	// or being written; 0: none yet).
	attempts int
	// started: the current attempt's ID reached the device.
	started bool
	// abortArmed: the current attempt's abort is registered.
	abortArmed bool
	// note, when set, is a successful ending's message (a cancel that
	// came too late to stop the update).
	note string

	// startThenWait (SP firmware): prechecks run as local activities (a
	// few reads and a small image's digest), and the start activity runs
	// the first leg of the wait for our update, which begun holds until
	// wait takes it. Host flash keeps separate activities: its phase 1
	// image is tens of MiB and its start is long.
	startThenWait bool
	begun         *activities.WaitUpdateResult
}

// mgsEnding says how an MGS update succeeded: the outcome and the device
// update that took effect (none when no change was needed).
type mgsEnding struct {
	outcome string
	update  uuid.UUID
}

var noChangeNeeded = mgsEnding{outcome: MGSOutcomeNoChangeNeeded}

func newMGSUpdate(ctx workflow.Context, kind Kind, target string, sp mgs.SpIdentifier, component string, art Artifact, t MGSTiming) (*mgsUpdate, error) {
	u := &mgsUpdate{kind: kind, target: target, sp: sp, component: component, artifact: art, timing: t}
	u.report.Progress = Progress{Kind: kind, Target: target, Artifact: art.Version, Unit: "bytes"}
	u.result = MGSUpdateResult{Target: target, Version: art.Version}
	l, err := newLifecycle(ctx, &u.report.Progress, MGSPhasePrecheck, ledgerWriter{}, func() MGSProgress { return u.report })
	u.lifecycle = l
	return u, err
}

// finish ends the update: with ok when err is nil, else failed or
// cancelled, its compensations run (the lifecycle's end). An update that
// ended before its first attempt (no change needed, a failed precheck)
// still leaves a ledger row.
func (u *mgsUpdate) finish(ctx workflow.Context, ok mgsEnding, err error) (MGSUpdateResult, error) {
	if u.attempts == 0 {
		dctx, cancel := workflow.NewDisconnectedContext(ctx)
		defer cancel()
		u.unwrittenAttempt(u.freshAttempt(dctx, 1, u.kind, u.target, u.artifact.Version))
		u.result.Attempts = 1
		u.result.AttemptIDs = append(u.result.AttemptIDs, u.attemptID().String())
	}
	if err == nil {
		u.result.Outcome = ok.outcome
		if ok.update != uuid.Nil {
			u.result.UpdateID = ok.update.String()
		}
	}
	return u.result, u.end(ctx, err, Ending{Outcome: ok.outcome, Message: u.note, Phase: MGSPhaseDone})
}

// --- ledger ---

var mgsActs *activities.MGSActivities

// --- activity options ---

// shortOpts and longOpts set a step's options; step names it in the Web
// UI's timeline ("reset SP sled 14").
func (u *mgsUpdate) shortOpts(ctx workflow.Context, step string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    5 * time.Minute,
		ScheduleToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:       2 * u.timing.HeartbeatTimeout,
		RetryPolicy:            deviceRetry,
		Summary:                u.summary(step),
	})
}

func (u *mgsUpdate) longOpts(ctx workflow.Context, bound time.Duration, step string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    bound + 10*time.Minute,
		ScheduleToCloseTimeout: 4*bound + time.Hour,
		HeartbeatTimeout:       u.timing.HeartbeatTimeout,
		RetryPolicy:            deviceRetry,
		Summary:                u.summary(step),
	})
}

func (u *mgsUpdate) summary(step string) string {
	return fmt.Sprintf("%s: %s of SP %s %d", step, u.component, u.sp.Type, u.sp.Slot)
}
