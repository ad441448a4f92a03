package workflows

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// The MGS update driver's device steps: precheck, wait for an update
// (ours or someone else's), watch and take over a concurrent update, and
// the SP's reset. Each sets its activity options beside its call.

// precheck reads the SP (after verifying arts). With startThenWait it is a
// local activity: a few reads and an SP image's digest, done within the
// workflow task that then records the intent and starts the update.
func (u *mgsUpdate) precheck(ctx workflow.Context, arts []Artifact) (activities.PrecheckResult, error) {
	var pre activities.PrecheckResult
	in := activities.PrecheckInput{SP: u.sp, Component: u.component, Artifacts: arts}
	if u.startThenWait {
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: 2 * time.Minute, ScheduleToCloseTimeout: 30 * time.Minute, RetryPolicy: deviceRetry,
			Summary: u.summary("precheck"),
		})
		return pre, workflow.ExecuteLocalActivity(lctx, mgsActs.MGSPrecheck, in).Get(ctx, &pre)
	}
	err := workflow.ExecuteActivity(u.shortOpts(ctx, "precheck"), mgsActs.MGSPrecheck, in).Get(ctx, &pre)
	return pre, err
}

// checkIdentity fails the update when the SP is not the one named.
func checkIdentity(want SPTarget, pre activities.PrecheckResult) error {
	if pre.Serial != want.Serial || (want.Part != "" && pre.Model != want.Part) {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("SP %s is serial %q part %q, expected serial %q part %q", want.id(), pre.Serial, pre.Model, want.Serial, want.Part),
			failure.WrongDevice, nil)
	}
	return nil
}

// checkVersions applies the version prechecks: never roll back, and the
// active and inactive versions are what the caller expects (when given).
func checkVersions(target, expectedActive, expectedInactive string, pre activities.PrecheckResult) error {
	active := slotVersion(pre.Active)
	if pre.Active.Valid && CompareVersions(pre.Active.Version, target) > 0 {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("active version %s is newer than target %s: never roll back", pre.Active.Version, target), failure.WouldDowngrade, nil)
	}
	if expectedActive != "" && expectedActive != active {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("active version: expected %s, found %s", expectedActive, active), failure.WrongActiveVersion, nil, expectedActive, active)
	}
	if inactive := slotVersion(pre.Inactive); expectedInactive != "" && expectedInactive != inactive {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("inactive version: expected %s, found %s", expectedInactive, inactive), failure.WrongInactiveVersion, nil, expectedInactive, inactive)
	}
	return nil
}

func slotVersion(s activities.SlotInfo) string {
	if !s.Valid {
		return NoValidVersion
	}
	return s.Version
}

// wait watches an update (ours or foreign) until it ends, in one
// heartbeating activity per leg; checkpoints refresh the progress query.
// The first leg of our update's wait may have run in the start activity
// (begun).
func (u *mgsUpdate) wait(ctx workflow.Context, id uuid.UUID, ours bool) (activities.WaitUpdateResult, error) {
	in := u.waitInput(id, ours)
	begun := u.begun
	u.begun = nil
	for n := 0; ; n++ {
		if n >= maxCheckpoints {
			in.CheckpointEvery = 0
		}
		var wr activities.WaitUpdateResult
		if n == 0 && begun != nil && ours {
			wr = *begun
		} else if err := workflow.ExecuteActivity(u.longOpts(ctx, u.waitBound(), "wait for the update"), mgsActs.MGSWaitUpdate, in).Get(ctx, &wr); err != nil {
			return wr, err
		}
		if ours {
			if wr.Total > 0 { // a checkpoint or the end; a leg that saw no bytes keeps the last count
				u.report.Done, u.report.Total = wr.Bytes, wr.Total
			}
			if wr.Outcome == activities.WaitComplete {
				// Too late to abort a complete update: nothing to undo.
				u.nothingToUndo()
			}
		}
		if wr.Outcome != activities.WaitCheckpoint {
			return wr, nil
		}
		in.LastBytes, in.LastChange, in.CompleteSince = wr.LastBytes, wr.LastChange, wr.CompleteSince
	}
}

func (u *mgsUpdate) waitInput(id uuid.UUID, ours bool) activities.WaitUpdateInput {
	return activities.WaitUpdateInput{
		SP: u.sp, Component: u.component, UpdateID: id, Ours: ours, AttemptID: u.attemptID(),
		PollInterval: u.timing.PollInterval, ProgressTimeout: u.timing.ProgressTimeout,
		TakeoverTimeout: u.timing.TakeoverTimeout, CheckpointEvery: u.timing.CheckpointEvery,
	}
}

// waitBound bounds one leg of a wait (and its retries: longOpts).
func (u *mgsUpdate) waitBound() time.Duration {
	return 6 * (u.timing.ProgressTimeout + u.timing.TakeoverTimeout)
}

// watchConcurrent follows someone else's update of the component until the
// SP is free ("free"), someone else activated it ("foreign_reset"), or we
// took it over and reset the SP ("took_over", SP component only).
func (u *mgsUpdate) watchConcurrent(ctx workflow.Context, cur mgs.UpdateStatus) (string, uuid.UUID, error) {
	u.phase(ctx, MGSPhaseConcurrent)
	for {
		if cur.State == mgs.UpdateNone {
			return "free", uuid.Nil, nil
		}
		u.report.Concurrent = cur.ID.String()
		u.report.Message = "another update (" + cur.String() + ") holds the SP: watching it"
		wr, err := u.wait(ctx, cur.ID, false)
		if err != nil {
			return "", cur.ID, err
		}
		switch wr.Outcome {
		case activities.WaitFree, activities.WaitStuck:
			u.report.Concurrent = ""
			return "free", cur.ID, nil
		case activities.WaitForeignDone:
			u.report.Concurrent = ""
			return "foreign_reset", cur.ID, nil
		case activities.WaitReplaced:
			cur = wr.Status
		case activities.WaitTakeover:
			pre, err := u.precheck(ctx, nil)
			if err != nil {
				return "", cur.ID, err
			}
			if pre.Inactive.Valid && pre.Active.Valid && CompareVersions(pre.Inactive.Version, pre.Active.Version) < 0 {
				return "", cur.ID, temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("concurrent update %s wrote %s, older than the active %s, and nobody reset the SP: taking it over would roll back",
						cur.ID, pre.Inactive.Version, pre.Active.Version), failure.ConcurrentDowngrade, nil)
			}
			u.report.Message = "concurrent update " + cur.ID.String() + " complete but not reset within " +
				u.timing.TakeoverTimeout.String() + ": taking it over"
			pr, err := u.postUpdateSP(ctx, cur.ID, slotVersion(pre.Inactive))
			if err != nil {
				return "", cur.ID, err
			}
			u.report.Concurrent = ""
			if pr.Outcome == activities.PostActivated {
				return "took_over", cur.ID, nil
			}
			return "free", cur.ID, nil
		default:
			return "", cur.ID, temporal.NewNonRetryableApplicationError("unexpected wait outcome "+wr.Outcome, failure.UnexpectedWaitOutcome, nil)
		}
	}
}

// postUpdateSP resets the SP to activate update id (version want).
func (u *mgsUpdate) postUpdateSP(ctx workflow.Context, id uuid.UUID, want string) (activities.PostUpdateResult, error) {
	u.phase(ctx, MGSPhasePostUpdate)
	// A cancelled reset stops before it is finished (spFirmware).
	actx := awaitCancel(u.longOpts(ctx, 4*u.timing.NewVersionTimeout, "reset, wait for the new version"))
	var pr activities.PostUpdateResult
	err := workflow.ExecuteActivity(actx, mgsActs.SPPostUpdate, activities.PostUpdateInput{
		SP: u.sp, UpdateID: id, AttemptID: u.attemptID(), TargetVersion: want,
		ResetRetryInterval: u.timing.ResetRetryInterval, NewVersionTimeout: u.timing.NewVersionTimeout,
		PollInterval: u.timing.PollInterval,
	}).Get(ctx, &pr)
	return pr, err
}
