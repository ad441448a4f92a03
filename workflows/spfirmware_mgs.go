package workflows

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// This file is the driver shared by the two MGS update kinds
// (SPFirmwareUpdate, HostBootFlashUpdate): attempts with workflow-generated
// UUIDs written to the ledger before the device sees them, start with
// failover, one heartbeating wait per attempt, concurrent updates watched
// and taken over, progress, search attributes and cancellation.

// SPTarget names an SP and what it must be.
type SPTarget struct {
	Type mgs.SpType `json:"type"`
	Slot uint16     `json:"slot"`
	// Serial is the expected serial number (identity check).
	Serial string `json:"serial"`
	// Part, when set, is the expected part number (MGS "model").
	Part string `json:"part,omitempty"`
}

func (t SPTarget) id() mgs.SpIdentifier { return mgs.SpIdentifier{Type: t.Type, Slot: t.Slot} }

func (t SPTarget) validate(what string) error {
	var errs []error
	if !t.Type.Valid() {
		errs = append(errs, fmt.Errorf("%s: type %q is not sled, switch or power", what, t.Type))
	}
	if strings.TrimSpace(t.Serial) == "" {
		errs = append(errs, fmt.Errorf("%s: serial is required (identity check)", what))
	}
	return errors.Join(errs...)
}

// Artifact is an image: version, SHA-256 (hex) and where workers read it.
type Artifact = activities.ArtifactRef

func validateArtifact(what string, a Artifact) error {
	var errs []error
	if a.Version == "" {
		errs = append(errs, fmt.Errorf("%s: version is required", what))
	}
	if len(a.SHA256) != 64 || strings.Trim(strings.ToLower(a.SHA256), "0123456789abcdef") != "" {
		errs = append(errs, fmt.Errorf("%s: sha256 must be 64 hex digits", what))
	}
	if (a.Path == "") == (a.URL == "") {
		errs = append(errs, fmt.Errorf("%s: exactly one of path and url is required", what))
	}
	return errors.Join(errs...)
}

// NoValidVersion as an expected inactive version means "the inactive slot
// holds no valid image" (its caboose does not read).
const NoValidVersion = "invalid"

// MGSTiming paces and bounds an MGS update (zero = default). The defaults
// are the real devices' (DOMAIN.md §B); tests against a sped-up fleetsim
// shrink them.
type MGSTiming struct {
	// PollInterval paces status polls (default 3 s).
	PollInterval time.Duration `json:"pollInterval,omitempty"`
	// ProgressTimeout: an update whose progress does not change for this
	// long is stuck: aborted, and a new attempt starts (default 600 s, the
	// Nexus driver's PROGRESS_TIMEOUT).
	ProgressTimeout time.Duration `json:"progressTimeout,omitempty"`
	// TakeoverTimeout: someone else's complete update that nobody resets
	// within this is taken over (default 600 s).
	TakeoverTimeout time.Duration `json:"takeoverTimeout,omitempty"`
	// ResetRetryInterval: after a reset whose reply was lost, wait this
	// long, re-check, then reset again if needed (default 10 s).
	ResetRetryInterval time.Duration `json:"resetRetryInterval,omitempty"`
	// NewVersionTimeout bounds the wait for the new version after a reset
	// (default SP 60 s, 120 s on a switch) or for the host's boot (30 min).
	NewVersionTimeout time.Duration `json:"newVersionTimeout,omitempty"`
	// AttemptDelay is the pause before a new attempt (default 60 s).
	AttemptDelay time.Duration `json:"attemptDelay,omitempty"`
	// MaxAttempts bounds the attempts (default 5).
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// CheckpointEvery: a long wait reports progress to the workflow this
	// often (default 60 s; at most maxCheckpoints per wait).
	CheckpointEvery time.Duration `json:"checkpointEvery,omitempty"`
	// HeartbeatTimeout: how soon a dead worker's device step is retried
	// elsewhere (default 30 s).
	HeartbeatTimeout time.Duration `json:"heartbeatTimeout,omitempty"`
}

func (t MGSTiming) withDefaults(newVersion time.Duration) MGSTiming {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&t.PollInterval, 3*time.Second)
	def(&t.ProgressTimeout, 600*time.Second)
	def(&t.TakeoverTimeout, 600*time.Second)
	def(&t.ResetRetryInterval, 10*time.Second)
	def(&t.NewVersionTimeout, newVersion)
	def(&t.AttemptDelay, 60*time.Second)
	def(&t.CheckpointEvery, 60*time.Second)
	def(&t.HeartbeatTimeout, 30*time.Second)
	if t.MaxAttempts <= 0 {
		t.MaxAttempts = 5
	}
	return t
}

func (t MGSTiming) validate(what string) error {
	for _, d := range []time.Duration{t.PollInterval, t.ProgressTimeout, t.TakeoverTimeout, t.ResetRetryInterval,
		t.NewVersionTimeout, t.AttemptDelay, t.CheckpointEvery, t.HeartbeatTimeout} {
		if d < 0 {
			return fmt.Errorf("%s: timings must not be negative", what)
		}
	}
	if t.MaxAttempts < 0 {
		return fmt.Errorf("%s: maxAttempts must not be negative", what)
	}
	return nil
}

// maxCheckpoints bounds the progress checkpoints of one wait, so a long
// delivery costs a handful of history events at most.
const maxCheckpoints = 4

// MGS update phases, in order (progress query, search attribute, ledger),
// after the Nexus driver's.
const (
	MGSPhasePrecheck     Phase = "precheck"
	MGSPhaseUpdating     Phase = "updating"
	MGSPhaseConcurrent   Phase = "waiting-for-concurrent-update"
	MGSPhasePostUpdate   Phase = "post-update"
	MGSPhaseHostBoot     Phase = "host-boot"
	MGSPhaseAttemptPause Phase = "attempt-pause"
	MGSPhaseDone         Phase = "done"
	MGSPhaseCompensating Phase = "compensating"
)

// How an MGS update succeeded (the result's and the ledger's outcome).
const (
	MGSOutcomeNoChangeNeeded   = "FoundNoChangesNeeded"
	MGSOutcomeCompletedUpdate  = "CompletedUpdate"
	MGSOutcomeWaitedConcurrent = "WaitedForConcurrentUpdate"
	MGSOutcomeTookOver         = "TookOverConcurrentUpdate"
)

// MGSUpdateResult says how an SP firmware or host flash update ended.
type MGSUpdateResult struct {
	// Outcome is one of the MGSOutcome* values.
	Outcome string `json:"outcome"`
	Target  string `json:"target"`
	Version string `json:"version"`
	// PreviousVersion is the active version found by the precheck.
	PreviousVersion string `json:"previousVersion,omitempty"`
	Attempts        int    `json:"attempts"`
	// AttemptIDs are this update's attempt UUIDs (ledger IDs; each one
	// that reached the device is also its MGS update ID).
	AttemptIDs []string `json:"attemptIds,omitempty"`
	// UpdateID is the device update that took effect (ours, or the
	// concurrent one we waited for or took over).
	UpdateID string `json:"updateId,omitempty"`
}

// MGSProgress is the progress query's answer: the common Progress plus the
// attempt and device update IDs.
type MGSProgress struct {
	Progress
	AttemptID string `json:"attemptId,omitempty"`
	// Concurrent is the foreign update being watched, if any.
	Concurrent string `json:"concurrent,omitempty"`
}

// mgsUpdate is one MGS update's state.
type mgsUpdate struct {
	kind      Kind
	target    string
	sp        mgs.SpIdentifier
	component string
	artifact  Artifact
	timing    MGSTiming

	progress MGSProgress
	result   MGSUpdateResult

	attempt   int
	attemptID uuid.UUID // current ledger attempt (uuid.Nil: none yet)
	finished  bool      // current attempt already ended in the ledger
	// recording is the attempt whose intent is being written: until the
	// write returns, the row may or may not be in the ledger (a cancel
	// stops the wait, not the write), so the ending must end it too.
	recording *ledger.Attempt
	started   bool // the current attempt's ID reached the device
	saga      Saga
	// abortArmed: the current attempt's abort is in saga.
	abortArmed bool
	abortNote  string

	workflowID, runID string
}

func newMGSUpdate(ctx workflow.Context, kind Kind, target string, sp mgs.SpIdentifier, component string, art Artifact, t MGSTiming) (*mgsUpdate, error) {
	now := workflow.Now(ctx)
	info := workflow.GetInfo(ctx)
	u := &mgsUpdate{kind: kind, target: target, sp: sp, component: component, artifact: art, timing: t,
		workflowID: info.WorkflowExecution.ID, runID: info.WorkflowExecution.RunID}
	u.progress.Progress = Progress{Kind: kind, Target: target, Artifact: art.Version, State: StateRunning,
		Phase: MGSPhasePrecheck, PhaseSince: now, Started: now, Unit: "bytes"}
	u.result = MGSUpdateResult{Target: target, Version: art.Version}
	if err := workflow.SetQueryHandler(ctx, ProgressQuery, func() (MGSProgress, error) { return u.progress, nil }); err != nil {
		return nil, err
	}
	setSearchState(ctx, StateRunning, MGSPhasePrecheck)
	return u, nil
}

func (u *mgsUpdate) phase(ctx workflow.Context, p Phase) {
	if u.progress.Phase == p {
		return
	}
	u.progress.Phase, u.progress.PhaseSince = p, workflow.Now(ctx)
	if p != MGSPhaseAttemptPause {
		setSearchState(ctx, StateRunning, Phase(p))
	}
}

// --- activity options ---

var mgsActs *activities.MGSActivities

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

// --- steps ---

func (u *mgsUpdate) precheck(ctx workflow.Context, arts []Artifact) (activities.PrecheckResult, error) {
	var pre activities.PrecheckResult
	err := workflow.ExecuteActivity(u.shortOpts(ctx, "precheck"), mgsActs.MGSPrecheck,
		activities.PrecheckInput{SP: u.sp, Component: u.component, Artifacts: arts}).Get(ctx, &pre)
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

// newAttempt ends the current attempt (as failed, with why) and records
// the next one's intent with a fresh workflow-generated UUID.
func (u *mgsUpdate) newAttempt(ctx workflow.Context, why string) error {
	if u.attempt >= u.timing.MaxAttempts {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%d attempts failed; last: %s", u.attempt, why), failure.AttemptsExhausted, nil)
	}
	if u.attempt > 0 && u.timing.AttemptDelay > 0 {
		u.phase(ctx, MGSPhaseAttemptPause)
		u.progress.Message = "attempt " + strconv.Itoa(u.attempt) + " failed (" + why + "); next attempt after " + u.timing.AttemptDelay.String()
		if err := workflow.Sleep(ctx, u.timing.AttemptDelay); err != nil {
			return err
		}
	}
	var id uuid.UUID
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return uuid.New() }).Get(&id); err != nil {
		return err
	}
	in := activities.RecordAttemptInput{Next: u.attemptRow(id, u.attempt+1)}
	if u.attemptID != uuid.Nil && !u.finished {
		in.Finish = &ledger.Finish{AttemptID: u.attemptID, State: ledger.StateFailed, Outcome: "attempt failed", Error: why}
	}
	if workflow.GetVersion(ctx, changeEndRecordingAttempt, workflow.DefaultVersion, 1) >= 1 {
		u.recording = in.Next
	}
	if err := workflow.ExecuteActivity(ledgerOptions(ctx), mgsActs.MGSRecordAttempt, in).Get(ctx, nil); err != nil {
		return err
	}
	u.adopt(in.Next)
	return nil
}

// changeEndRecordingAttempt: an attempt whose intent was being written
// when the update was cancelled (or failed) is ended too, by its own ID.
// Histories before it ended only the previous attempt, or recorded a
// fresh one, and left the late-committed row active.
const changeEndRecordingAttempt = "end-attempt-being-recorded"

// adopt makes a recorded attempt the current one.
func (u *mgsUpdate) adopt(a *ledger.Attempt) {
	u.recording = nil
	u.attempt = a.Attempt
	u.attemptID, u.finished, u.started = a.ID, false, false
	u.saga, u.abortArmed = Saga{}, false
	u.result.Attempts = u.attempt
	u.result.AttemptIDs = append(u.result.AttemptIDs, a.ID.String())
	u.progress.Attempt, u.progress.AttemptID = u.attempt, a.ID.String()
	u.progress.Done, u.progress.Total, u.progress.Message = 0, 0, ""
}

func (u *mgsUpdate) attemptRow(id uuid.UUID, n int) *ledger.Attempt {
	return &ledger.Attempt{ID: id, UpdateID: u.workflowID, Attempt: n, Kind: string(u.kind),
		Target: u.target, Artifact: u.artifact.Version, WorkflowID: u.workflowID, RunID: u.runID}
}

// finishLedger ends the current attempt (recording one first if none was,
// so even a precheck failure is in the ledger).
func (u *mgsUpdate) finishLedger(ctx workflow.Context, state ledger.State, outcome, errText string) error {
	if u.finished {
		return nil
	}
	in := activities.RecordAttemptInput{}
	if r := u.recording; r != nil {
		// Write the attempt again (idempotent by ID) and end it, after
		// the previous one: whether or not its first write committed,
		// no attempt of ours stays active.
		if u.attemptID != uuid.Nil {
			in.Finish = &ledger.Finish{AttemptID: u.attemptID, State: state, Outcome: outcome, Error: errText}
		}
		in.Next = r
		in.FinishNext = &ledger.Finish{AttemptID: r.ID, State: state, Outcome: outcome, Error: errText}
		if err := workflow.ExecuteActivity(ledgerOptions(ctx), mgsActs.MGSRecordAttempt, in).Get(ctx, nil); err != nil {
			return err
		}
		u.adopt(r)
		u.finished = true
		return nil
	}
	if u.attemptID == uuid.Nil {
		var id uuid.UUID
		if err := workflow.SideEffect(ctx, func(workflow.Context) any { return uuid.New() }).Get(&id); err != nil {
			return err
		}
		u.attemptID, u.attempt = id, 1
		u.result.Attempts = 1
		u.result.AttemptIDs = append(u.result.AttemptIDs, id.String())
		in.Next = u.attemptRow(id, 1)
		in.FinishNext = &ledger.Finish{AttemptID: id, State: state, Outcome: outcome, Error: errText}
	} else {
		in.Finish = &ledger.Finish{AttemptID: u.attemptID, State: state, Outcome: outcome, Error: errText}
	}
	if err := workflow.ExecuteActivity(ledgerOptions(ctx), mgsActs.MGSRecordAttempt, in).Get(ctx, nil); err != nil {
		return err
	}
	u.finished = true
	return nil
}

// changeAbortBeforeStart: the abort of our update is registered before the
// start and the start's cancellation is awaited, so an update MGS accepts
// after a cancel is still aborted. Histories before it registered the
// abort only after the start returned.
const changeAbortBeforeStart = "abort-registered-before-start"

// start sends the image under the current attempt's UUID.
func (u *mgsUpdate) start(ctx workflow.Context, fwSlot uint16) (activities.StartUpdateResult, error) {
	u.phase(ctx, MGSPhaseUpdating)
	early := workflow.GetVersion(ctx, changeAbortBeforeStart, workflow.DefaultVersion, 1) >= 1
	actx := u.longOpts(ctx, 15*time.Minute, "start the update")
	if early {
		u.armAbort()
		actx = workflow.WithWaitForCancellation(actx, true)
	}
	var sr activities.StartUpdateResult
	err := workflow.ExecuteActivity(actx, mgsActs.MGSStartUpdate, activities.StartUpdateInput{
		SP: u.sp, Component: u.component, FirmwareSlot: fwSlot, UpdateID: u.attemptID, Artifact: u.artifact,
		PollInterval: u.timing.PollInterval,
	}).Get(ctx, &sr)
	if err != nil {
		return sr, err
	}
	if sr.Started && !u.started {
		u.started = true
		if !early {
			u.armAbort()
		}
	}
	return sr, nil
}

// armAbort registers the compensation of the current attempt, once: abort
// our update by its ID (the SP's state says whether it was ours to abort).
func (u *mgsUpdate) armAbort() {
	if u.abortArmed {
		return
	}
	u.abortArmed = true
	id := u.attemptID
	u.saga.Add("abort update "+id.String(), func(ctx workflow.Context) error {
		var res string
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute, ScheduleToCloseTimeout: 5 * time.Minute, RetryPolicy: deviceRetry,
		})
		err := workflow.ExecuteActivity(actx, mgsActs.MGSAbortUpdate, activities.AbortInput{
			SP: u.sp, Component: u.component, UpdateID: id, AttemptID: id, Reason: "update cancelled",
		}).Get(ctx, &res)
		u.abortNote = "abort " + id.String() + ": " + res
		return err
	})
}

// wait watches an update (ours or foreign) until it ends, in one
// heartbeating activity per leg; checkpoints refresh the progress query.
func (u *mgsUpdate) wait(ctx workflow.Context, id uuid.UUID, ours bool) (activities.WaitUpdateResult, error) {
	in := activities.WaitUpdateInput{
		SP: u.sp, Component: u.component, UpdateID: id, Ours: ours, AttemptID: u.attemptID,
		PollInterval: u.timing.PollInterval, ProgressTimeout: u.timing.ProgressTimeout,
		TakeoverTimeout: u.timing.TakeoverTimeout, CheckpointEvery: u.timing.CheckpointEvery,
	}
	bound := u.timing.ProgressTimeout + u.timing.TakeoverTimeout
	for n := 0; ; n++ {
		if n >= maxCheckpoints {
			in.CheckpointEvery = 0
		}
		var wr activities.WaitUpdateResult
		if err := workflow.ExecuteActivity(u.longOpts(ctx, 6*bound, "wait for the update"), mgsActs.MGSWaitUpdate, in).Get(ctx, &wr); err != nil {
			return wr, err
		}
		if ours {
			if wr.Total > 0 { // a checkpoint or the end; a leg that saw no bytes keeps the last count
				u.progress.Done, u.progress.Total = wr.Bytes, wr.Total
			}
			if wr.Outcome == activities.WaitComplete {
				// Too late to abort a complete update: nothing to compensate.
				u.saga = Saga{}
			}
		}
		if wr.Outcome != activities.WaitCheckpoint {
			return wr, nil
		}
		in.LastBytes, in.LastChange, in.CompleteSince = wr.LastBytes, wr.LastChange, wr.CompleteSince
	}
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
		u.progress.Concurrent = cur.ID.String()
		u.progress.Message = "another update (" + cur.String() + ") holds the SP: watching it"
		wr, err := u.wait(ctx, cur.ID, false)
		if err != nil {
			return "", cur.ID, err
		}
		switch wr.Outcome {
		case activities.WaitFree, activities.WaitStuck:
			u.progress.Concurrent = ""
			return "free", cur.ID, nil
		case activities.WaitForeignDone:
			u.progress.Concurrent = ""
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
			u.progress.Message = "concurrent update " + cur.ID.String() + " complete but not reset within " +
				u.timing.TakeoverTimeout.String() + ": taking it over"
			pr, err := u.postUpdateSP(ctx, cur.ID, slotVersion(pre.Inactive))
			if err != nil {
				return "", cur.ID, err
			}
			u.progress.Concurrent = ""
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
	var pr activities.PostUpdateResult
	err := workflow.ExecuteActivity(u.longOpts(ctx, 4*u.timing.NewVersionTimeout, "reset, wait for the new version"), mgsActs.SPPostUpdate, activities.PostUpdateInput{
		SP: u.sp, UpdateID: id, AttemptID: u.attemptID, TargetVersion: want,
		ResetRetryInterval: u.timing.ResetRetryInterval, NewVersionTimeout: u.timing.NewVersionTimeout,
		PollInterval: u.timing.PollInterval,
	}).Get(ctx, &pr)
	return pr, err
}

// succeed ends the update with outcome.
func (u *mgsUpdate) succeed(ctx workflow.Context, outcome string, updateID uuid.UUID) (MGSUpdateResult, error) {
	if err := u.finishLedger(ctx, ledger.StateCompleted, outcome, ""); err != nil {
		return u.result, err
	}
	u.result.Outcome = outcome
	if updateID != uuid.Nil {
		u.result.UpdateID = updateID.String()
	}
	u.progress.Outcome = outcome
	u.progress.State = StateCompleted
	u.progress.Phase, u.progress.PhaseSince = MGSPhaseDone, workflow.Now(ctx)
	u.progress.Message = ""
	setSearchState(ctx, StateCompleted, MGSPhaseDone)
	return u.result, nil
}

// end turns a failure or a cancellation into the workflow's ending: a
// cancelled update aborts its in-flight attempt by ID (on a disconnected
// context) and records that; a failed one records its error.
func (u *mgsUpdate) end(ctx workflow.Context, err error) (MGSUpdateResult, error) {
	if temporal.IsCanceledError(err) || errors.Is(ctx.Err(), workflow.ErrCanceled) {
		dctx, cancel := workflow.NewDisconnectedContext(ctx)
		defer cancel()
		u.progress.Phase, u.progress.PhaseSince = MGSPhaseCompensating, workflow.Now(dctx)
		cerr := u.saga.Compensate(dctx)
		note := "cancelled"
		if u.abortNote != "" {
			note += "; " + u.abortNote
		}
		if cerr != nil {
			note += "; compensation failed: " + cerr.Error()
		}
		if lerr := u.finishLedger(dctx, ledger.StateCancelled, "cancelled", note); lerr != nil {
			workflow.GetLogger(ctx).Error("ledger: recording the cancellation failed", "error", lerr)
		}
		u.progress.State, u.progress.Outcome, u.progress.Message = StateCancelled, "cancelled", note
		setSearchState(dctx, StateCancelled, Phase(u.progress.Phase))
		return u.result, temporal.NewCanceledError(note)
	}
	// A failed update leaves no update of ours running on the SP either.
	errText := err.Error()
	if u.saga.Len() > 0 {
		if cerr := u.saga.Compensate(ctx); cerr != nil {
			errText += "; compensation failed: " + cerr.Error()
		} else if u.abortNote != "" {
			errText += "; " + u.abortNote
		}
	}
	if lerr := u.finishLedger(ctx, ledger.StateFailed, "failed", errText); lerr != nil {
		workflow.GetLogger(ctx).Error("ledger: recording the failure failed", "error", lerr)
	}
	u.progress.State, u.progress.Outcome, u.progress.Message = StateFailed, "failed", err.Error()
	setSearchState(ctx, StateFailed, Phase(u.progress.Phase))
	return u.result, err
}

// CompareVersions compares dotted versions numerically field by field
// ("1.10.0" > "1.9.2"); non-numeric fields compare as strings. It returns
// -1, 0 or 1.
func CompareVersions(a, b string) int {
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '-' || r == '+' })
	}
	as, bs := split(a), split(b)
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y string
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		xn, xerr := strconv.ParseUint(x, 10, 64)
		yn, yerr := strconv.ParseUint(y, 10, 64)
		switch {
		case x == y:
			continue
		case xerr == nil && yerr == nil:
			if xn < yn {
				return -1
			}
			return 1
		case x == "":
			return -1
		case y == "":
			return 1
		case x < y:
			return -1
		default:
			return 1
		}
	}
	return 0
}
