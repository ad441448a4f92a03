package workflows

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// BootImageBump brings a cluster's MachineSets to its release's golden boot
// images and enforces the boot image skew (DESIGN.md §3.4, DOMAIN.md §G):
//
//  1. record intent in the ledger;
//  2. wait (bounded) until the cluster is not installing/upgrading and the
//     golden record is stamped for its current release;
//  3. plan every selected MachineSet: skip (counted, not an error) owned,
//     Windows, unsupported OS stream, custom image, unknown arch on a
//     multi-arch cluster; refuse a RHEL major mismatch;
//  4. patch each outdated one (merge patch with its resourceVersion; a
//     conflict is retried on a fresh read), then look again after a settle
//     interval: one that needs the same patch again after HotLoopLimit
//     patches is being reverted by another actor: stop and report it;
//  5. optional canary: scale one patched MachineSet up by one and wait for
//     the machine to join; if it does not, restore the previous image on
//     every MachineSet patched in this run and scale the canary back down
//     (the same compensations run if the bump is cancelled). Each patch and
//     scale-up is written to the ledger before it is made, and the changes
//     of a terminated bump of the cluster are adopted into this rollback
//     (bootimage_adopt.go);
//  6. record the cluster's boot image version only if every selected
//     MachineSet reconciled with nothing skipped and nothing failed;
//  7. evaluate the skew (Automatic / Manual / None) and set the
//     Upgradeable condition.
func BootImageBump(ctx workflow.Context, in BootImageBumpInput) (BootImageBumpResult, error) {
	b := &bootImageBump{in: in}
	if err := b.setup(ctx); err != nil {
		return b.result, err
	}
	return b.run(ctx)
}

// Selection modes (which MachineSets the bump manages).
const (
	SelectAll     = "All"
	SelectPartial = "Partial"
	SelectNone    = "None"
)

// BootImageBumpInput is one bump of one cluster.
type BootImageBumpInput struct {
	Cluster string `json:"cluster"`
	// Release, when set, must be the cluster's current release (the bump
	// fails instead of bumping to another one).
	Release string `json:"release,omitempty"`
	// Selection: All (default), Partial (MachineSets matching Selector) or None.
	Selection string `json:"selection,omitempty"`
	Selector  string `json:"selector,omitempty"`
	// Skew enforcement: Automatic (default), Manual (with ManualOCPVersion
	// x.y.z or ManualRHCOSVersion major.minor) or None.
	Skew               string `json:"skew,omitempty"`
	ManualOCPVersion   string `json:"manualOCPVersion,omitempty"`
	ManualRHCOSVersion string `json:"manualRHCOSVersion,omitempty"`
	// Canary, when set, proves the new image boots before the bump records.
	Canary *BootImageCanary `json:"canary,omitempty"`
	// Concurrency bounds MachineSets reconciled at once (default 10).
	Concurrency int `json:"concurrency,omitempty"`
	// PreconditionTimeout bounds the wait for an upgrade to finish and the
	// golden record to be stamped (default 30 min).
	PreconditionTimeout time.Duration `json:"preconditionTimeout,omitempty"`
	// SettleInterval is how long after a patch the MachineSet is looked at
	// again to catch another actor reverting it (default 10 s).
	SettleInterval time.Duration `json:"settleInterval,omitempty"`
	// PollInterval of the waits (default 5 s).
	PollInterval time.Duration `json:"pollInterval,omitempty"`
	// HotLoopLimit is how many times the same patch is applied before the
	// MachineSet is reported as reverted by another actor (default 3).
	HotLoopLimit int `json:"hotLoopLimit,omitempty"`
}

// BootImageCanary is the optional canary scale-up.
type BootImageCanary struct {
	// MachineSet to scale up by one; default the first patched one.
	MachineSet string `json:"machineSet,omitempty"`
	// Timeout for the new machine to join (default 20 min).
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Target implements UpdateInput.
func (in *BootImageBumpInput) Target() string { return "cluster/" + in.Cluster }

// ArtifactVersion implements UpdateInput: the release, when stated.
func (in *BootImageBumpInput) ArtifactVersion() string { return in.Release }

// Validate implements UpdateInput.
func (in *BootImageBumpInput) Validate() error {
	var errs []error
	if in.Cluster == "" || strings.ContainsAny(in.Cluster, "/ ") {
		errs = append(errs, errors.New("cluster is required and must not contain '/' or spaces"))
	}
	if in.Release != "" {
		if _, err := ParseReleaseVersion(in.Release); err != nil {
			errs = append(errs, err)
		}
	}
	switch in.Selection {
	case "", SelectAll, SelectNone:
		if in.Selector != "" {
			errs = append(errs, errors.New("selector is only used with selection Partial"))
		}
	case SelectPartial:
		if in.Selector == "" {
			errs = append(errs, errors.New("selection Partial needs a label selector"))
		}
	default:
		errs = append(errs, fmt.Errorf("selection must be All, Partial or None, not %q", in.Selection))
	}
	switch in.Skew {
	case "", SkewAutomatic, SkewNone:
		if in.ManualOCPVersion != "" || in.ManualRHCOSVersion != "" {
			errs = append(errs, errors.New("manual versions are only used with skew Manual"))
		}
	case SkewManual:
		switch {
		case (in.ManualOCPVersion == "") == (in.ManualRHCOSVersion == ""):
			errs = append(errs, errors.New("skew Manual needs exactly one of manualOCPVersion (x.y.z) or manualRHCOSVersion (major.minor)"))
		case in.ManualOCPVersion != "":
			if _, err := ParseReleaseVersion(in.ManualOCPVersion); err != nil {
				errs = append(errs, err)
			}
		default:
			if _, err := rhcosMajorMinor(in.ManualRHCOSVersion); err != nil {
				errs = append(errs, err)
			}
		}
	default:
		errs = append(errs, fmt.Errorf("skew must be Automatic, Manual or None, not %q", in.Skew))
	}
	if in.Concurrency < 0 || in.Concurrency > 100 {
		errs = append(errs, errors.New("concurrency must be within 0..100 (0 = default 10)"))
	}
	if in.HotLoopLimit < 0 {
		errs = append(errs, errors.New("hotLoopLimit must be >= 0 (0 = default 3)"))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"preconditionTimeout", in.PreconditionTimeout}, {"settleInterval", in.SettleInterval}, {"pollInterval", in.PollInterval}} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("%s must be >= 0", d.name))
		}
	}
	if in.Canary != nil && in.Canary.Timeout < 0 {
		errs = append(errs, errors.New("canary timeout must be >= 0"))
	}
	return errors.Join(errs...)
}

func (in *BootImageBumpInput) defaults() {
	if in.Selection == "" {
		in.Selection = SelectAll
	}
	if in.Skew == "" {
		in.Skew = SkewAutomatic
	}
	if in.Concurrency == 0 {
		in.Concurrency = 10
	}
	if in.PreconditionTimeout == 0 {
		in.PreconditionTimeout = 30 * time.Minute
	}
	if in.SettleInterval == 0 {
		in.SettleInterval = 10 * time.Second
	}
	if in.PollInterval == 0 {
		in.PollInterval = 5 * time.Second
	}
	if in.HotLoopLimit == 0 {
		in.HotLoopLimit = 3
	}
	if in.Canary != nil && in.Canary.Timeout == 0 {
		in.Canary.Timeout = 20 * time.Minute
	}
}

// BootImageBumpResult is the summary: reconciled / skipped / failed.
type BootImageBumpResult struct {
	Cluster string `json:"cluster"`
	Release string `json:"release,omitempty"`
	// Outcome: Reconciled, ReconciledWithSkips, NothingSelected, Failed,
	// CanaryFailed, Cancelled.
	Outcome string `json:"outcome"`
	// UpToDate were already on the golden image; Patched were patched by this run.
	UpToDate []string          `json:"upToDate,omitempty"`
	Patched  []string          `json:"patched,omitempty"`
	Skipped  []BootImageMember `json:"skipped,omitempty"`
	Failed   []BootImageMember `json:"failed,omitempty"`
	// HotLoop lists MachineSets another actor kept reverting (also in Failed).
	HotLoop []string `json:"hotLoop,omitempty"`
	// OptIn is the cluster's MachineConfiguration opt-in the run applied.
	OptIn *machineapi.OptIn `json:"optIn,omitempty"`
	// BootImageVersion is the cluster's boot image version after the run.
	BootImageVersion string                 `json:"bootImageVersion,omitempty"`
	Skew             SkewVerdict            `json:"skew"`
	Canary           *BootImageCanaryReport `json:"canary,omitempty"`
	// Restored lists compensation outcomes ("<machineset>: restored").
	Restored []string `json:"restored,omitempty"`
	// Adopted lists the changes of abandoned (terminated) bumps this run
	// took into its rollback ("<machineset> image|scale (from <attempt>)").
	Adopted []string `json:"adopted,omitempty"`
	// Waited says what the preconditions waited for.
	Waited []string `json:"waited,omitempty"`
}

// BootImageMember is one skipped or failed MachineSet with the reason.
type BootImageMember struct {
	MachineSet string `json:"machineSet"`
	Reason     string `json:"reason"`
	Detail     string `json:"detail,omitempty"`
}

// BootImageCanaryReport is the canary's story.
type BootImageCanaryReport struct {
	MachineSet string `json:"machineSet"`
	Joined     bool   `json:"joined"`
	Machine    string `json:"machine,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

// BootImageProgress is the progress query answer: the common progress plus
// the summary so far.
type BootImageProgress struct {
	Progress
	Summary BootImageBumpResult `json:"summary"`
}

// BootImageBumpWorkflowID is the bump's workflow ID for a cluster.
func BootImageBumpWorkflowID(cluster string) string {
	return WorkflowID(KindBootImageBump, "cluster/"+cluster)
}

// Bump phases, as the progress query, the ledger and the Web UI show them.
const (
	bumpPhasePreconditions Phase = "WaitingForPreconditions"
	bumpPhasePlanning      Phase = "Planning"
	bumpPhasePatching      Phase = "Patching"
	bumpPhaseCanary        Phase = "Canary"
	bumpPhaseRollingBack   Phase = "RollingBack"
	bumpPhaseSkew          Phase = "SkewEnforcement"
	bumpPhaseDone          Phase = "Done"
)

func init() {
	DeclarePhases([]Phase{bumpPhasePreconditions, bumpPhasePlanning, bumpPhasePatching, bumpPhaseCanary, bumpPhaseRollingBack,
		bumpPhaseSkew, bumpPhaseDone},
		bumpPhasePreconditions, bumpPhasePatching, bumpPhaseCanary, bumpPhaseRollingBack, bumpPhaseSkew)
}

// Failure reasons beyond the plan's.
const (
	bumpReasonHotLoop = "HotLoop"
	bumpReasonError   = "Error"
)

type bootImageBump struct {
	in        BootImageBumpInput
	attemptID uuid.UUID
	progress  BootImageProgress
	result    BootImageBumpResult
	snap      activities.BootImageSnapshot
	life      *Lifecycle
	// patched in this run, with the image before and after (for the saga).
	applied map[string][2]machineapi.BootImage
	events  int
	// adoptedImages are the MachineSets that abandoned bumps patched, and
	// adoptedScales their canary scale-ups, adopted into this run's
	// rollback (bootimage_adopt.go).
	adoptedImages []string
	adoptedScales []activities.BootImageChange
}

func (b *bootImageBump) setup(ctx workflow.Context) error {
	if err := b.in.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "InvalidInput", nil)
	}
	b.in.defaults()
	b.applied = map[string][2]machineapi.BootImage{}
	b.result = BootImageBumpResult{Cluster: b.in.Cluster, Release: b.in.Release}
	b.progress = BootImageProgress{Progress: Progress{
		Kind: KindBootImageBump, Target: b.in.Target(), Artifact: b.in.Release, Unit: "machinesets",
		Counts: map[string]int{"done": 0, "running": 0, "failed": 0, "skipped": 0},
	}}
	// No phase until the intent is recorded (the first phase is the wait
	// for the preconditions).
	life, err := NewLifecycle(ctx, &b.progress.Progress, "", LedgerWriter{}, func() BootImageProgress {
		p := b.progress
		p.Summary = b.result
		return p
	})
	if err != nil {
		return err
	}
	b.life = life
	life.RecordPhaseInLedger()
	return nil
}

func (b *bootImageBump) run(ctx workflow.Context) (BootImageBumpResult, error) {
	if err := b.recordIntent(ctx); err != nil {
		// The ending also ends an attempt whose write is in doubt.
		b.result.Outcome = "Failed"
		return b.result, b.end(ctx, err)
	}
	if err := b.adoptAbandoned(ctx); err != nil {
		return b.fail(ctx, "Failed", err)
	}
	if err := b.waitPreconditions(ctx); err != nil {
		return b.fail(ctx, "Failed", err)
	}
	plans, err := b.plan(ctx)
	if err != nil {
		return b.fail(ctx, "Failed", err)
	}
	if b.in.Selection == SelectNone {
		b.result.Outcome = "NothingSelected"
	}
	b.reconcileAll(ctx, plans)
	if ctx.Err() != nil {
		return b.cancelled(ctx)
	}
	if b.in.Canary != nil {
		ok, err := b.canary(ctx)
		if ctx.Err() != nil {
			return b.cancelled(ctx)
		}
		if err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("canary on %s did not join: %s", b.result.Canary.MachineSet, b.result.Canary.Detail)
			}
			return b.fail(ctx, "CanaryFailed", err)
		}
	}
	b.releaseAdoptedCanaries(ctx)
	if ctx.Err() != nil {
		return b.cancelled(ctx)
	}
	b.record(ctx)
	b.enforceSkew(ctx)
	switch {
	case len(b.result.Failed) > 0:
		return b.fail(ctx, "Failed", fmt.Errorf("%d MachineSet(s) failed: %s", len(b.result.Failed), memberList(b.result.Failed)))
	case b.in.Selection == SelectNone:
	case len(b.result.Skipped) > 0:
		b.result.Outcome = "ReconciledWithSkips"
	default:
		b.result.Outcome = "Reconciled"
	}
	return b.result, b.end(ctx, nil)
}

func memberList(ms []BootImageMember) string {
	var parts []string
	for _, m := range ms {
		parts = append(parts, m.MachineSet+" ("+m.Reason+")")
	}
	return strings.Join(parts, ", ")
}

// --- activity options ---

func bumpAPIOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    2 * time.Minute,
		ScheduleToCloseTimeout: 20 * time.Minute,
		RetryPolicy:            DeviceRetry,
		Summary:                summary,
	})
}

func bumpWaitOptions(ctx workflow.Context, bound time.Duration, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    bound + 2*time.Minute,
		ScheduleToCloseTimeout: bound + 10*time.Minute,
		HeartbeatTimeout:       time.Minute,
		RetryPolicy:            DeviceRetry,
		Summary:                summary,
	})
}

// bumpChangeOptions are for activities that change a MachineSet (patch,
// scale). On cancel the workflow waits until the activity has ended (it
// heartbeats, so it hears of the cancel between calls): otherwise the
// restore could look first, find nothing to undo, and the in-flight change
// land after it.
func (b *bootImageBump) bumpChangeOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    2 * time.Minute,
		ScheduleToCloseTimeout: 20 * time.Minute,
		HeartbeatTimeout:       30 * time.Second,
		WaitForCancellation:    true,
		RetryPolicy:            DeviceRetry,
		Summary:                summary,
	})
}

// --- steps ---

// event appends one ledger event; steps are numbered so each is unique.
func (b *bootImageBump) event(ctx workflow.Context, step, state, msg string) {
	b.events++
	var l *activities.LedgerActivities
	_ = workflow.ExecuteActivity(LedgerOptions(ctx), l.AppendEvent, ledger.Event{
		AttemptID: b.attemptID, Step: fmt.Sprintf("%03d-%s", b.events, step), State: state, Message: msg,
	}).Get(ctx, nil)
}

func (b *bootImageBump) recordIntent(ctx workflow.Context) error {
	err := b.life.RecordIntent(ctx, b.life.FreshAttempt(ctx, 1, KindBootImageBump, b.in.Target(), b.in.Release))
	b.attemptID = b.life.AttemptID()
	return err
}

func (b *bootImageBump) waitPreconditions(ctx workflow.Context) error {
	b.life.Phase(ctx, bumpPhasePreconditions)
	var a *activities.BootImageActivities
	actx := bumpWaitOptions(ctx, b.in.PreconditionTimeout, "wait until "+b.in.Cluster+" is not upgrading and its golden record is stamped")
	err := workflow.ExecuteActivity(actx, a.WaitBootImagePreconditions, activities.BootImagePreconditionsInput{
		Cluster: b.in.Cluster, Release: b.in.Release,
		Deadline:     workflow.Now(ctx).Add(b.in.PreconditionTimeout),
		PollInterval: b.in.PollInterval,
	}).Get(ctx, &b.snap)
	if err != nil {
		return err
	}
	b.result.Release, b.result.Waited = b.snap.Release, b.snap.Waited
	b.result.BootImageVersion = b.snap.Record.OCPVersion
	b.progress.Artifact = b.snap.Release
	if err := workflow.UpsertTypedSearchAttributes(ctx, SAArtifact.ValueSet(b.snap.Release)); err != nil {
		workflow.GetLogger(ctx).Warn("upsert artifact failed", "error", err)
	}
	b.event(ctx, "preconditions", "running", fmt.Sprintf("cluster at %s, golden record stamped (waited for: %s)", b.snap.Release, strings.Join(b.snap.Waited, "; ")))
	return nil
}

func (b *bootImageBump) plan(ctx workflow.Context) ([]machineapi.Plan, error) {
	b.life.Phase(ctx, bumpPhasePlanning)
	var a *activities.BootImageActivities
	var res activities.BootImagePlanResult
	err := workflow.ExecuteActivity(bumpAPIOptions(ctx, "plan MachineSets of "+b.in.Cluster), a.PlanBootImages, activities.BootImagePlanInput{
		Cluster: b.in.Cluster, Release: b.snap.Release, Selection: b.in.Selection, Selector: b.in.Selector,
		FromCluster: true,
	}).Get(ctx, &res)
	if err != nil {
		return nil, err
	}
	b.in.Selection, b.in.Selector = res.OptIn.Mode, res.OptIn.Selector
	b.result.OptIn = &res.OptIn
	b.progress.Total = int64(len(res.Plans))
	counts := map[machineapi.Action]int{}
	for _, p := range res.Plans {
		counts[p.Action]++
	}
	b.event(ctx, "plan", "running", fmt.Sprintf("%d selected: %d to patch, %d up to date, %d skipped, %d refused",
		len(res.Plans), counts[machineapi.ActionPatch], counts[machineapi.ActionUpToDate], counts[machineapi.ActionSkip], counts[machineapi.ActionRefuse]))
	return res.Plans, nil
}

func (b *bootImageBump) done(kind string) {
	b.progress.Done++
	b.progress.Counts[kind]++
}

func (b *bootImageBump) skip(p machineapi.Plan) {
	b.result.Skipped = append(b.result.Skipped, BootImageMember{MachineSet: p.MachineSet, Reason: string(p.Reason), Detail: p.Detail})
	b.done("skipped")
}

func (b *bootImageBump) failMember(name, reason, detail string) {
	b.result.Failed = append(b.result.Failed, BootImageMember{MachineSet: name, Reason: reason, Detail: detail})
	b.done("failed")
}

// reconcileAll reconciles the plans with bounded concurrency.
func (b *bootImageBump) reconcileAll(ctx workflow.Context, plans []machineapi.Plan) {
	b.life.Phase(ctx, bumpPhasePatching)
	running := 0
	wg := workflow.NewWaitGroup(ctx)
	for _, p := range plans {
		switch p.Action {
		case machineapi.ActionSkip:
			b.skip(p)
			continue
		case machineapi.ActionRefuse:
			b.failMember(p.MachineSet, string(p.Reason), p.Detail)
			continue
		case machineapi.ActionUpToDate:
			b.result.UpToDate = append(b.result.UpToDate, p.MachineSet)
			b.done("done")
			continue
		}
		if err := workflow.Await(ctx, func() bool { return running < b.in.Concurrency }); err != nil {
			break
		}
		running++
		b.progress.Counts["running"] = running
		wg.Add(1)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer wg.Done()
			b.reconcileOne(ctx, p)
			running--
			b.progress.Counts["running"] = running
		})
	}
	wg.Wait(ctx)
	sort.Strings(b.result.Patched)
	sort.Strings(b.result.UpToDate)
	sort.Strings(b.result.HotLoop)
	sort.Slice(b.result.Failed, func(i, j int) bool { return b.result.Failed[i].MachineSet < b.result.Failed[j].MachineSet })
	sort.Slice(b.result.Skipped, func(i, j int) bool { return b.result.Skipped[i].MachineSet < b.result.Skipped[j].MachineSet })
}

// reconcileOne patches one MachineSet and watches for another actor
// reverting it (the hot-loop guard).
func (b *bootImageBump) reconcileOne(ctx workflow.Context, p machineapi.Plan) {
	name := p.MachineSet
	// Register the restore before the first patch: if a worker dies right
	// after the patch lands, the retry sees "up to date" and never reports
	// the previous image. The restore only acts on our image.
	b.applied[name] = [2]machineapi.BootImage{p.Current, p.Desired}
	b.life.beforeAction("restore boot image of "+name, func(ctx workflow.Context) error {
		imgs := b.applied[name]
		return b.restoreImage(ctx, name, imgs[0], imgs[1])
	})
	if _, err := b.recordChange(ctx, activities.BootImageChange{MachineSet: name, Change: ledger.BootImageChangeImage, Previous: p.Current, Applied: p.Desired}); err != nil {
		if ctx.Err() == nil {
			b.failMember(name, bumpReasonError, err.Error())
		}
		return
	}
	var a *activities.BootImageActivities
	applied := 0
	for {
		var r activities.BootImageReconcileResult
		err := workflow.ExecuteActivity(b.bumpChangeOptions(ctx, "reconcile boot image of "+name), a.ReconcileBootImage, activities.BootImageReconcileInput{
			Cluster: b.in.Cluster, MachineSet: name, Release: b.snap.Release, CheckOnly: applied >= b.in.HotLoopLimit,
		}).Get(ctx, &r)
		if err != nil {
			if ctx.Err() == nil {
				b.failMember(name, bumpReasonError, err.Error())
				b.event(ctx, "error-"+name, "failed", err.Error())
			}
			return
		}
		switch r.Action {
		case activities.ReconcilePatched:
			applied++
			b.applied[name] = [2]machineapi.BootImage{b.applied[name][0], r.Plan.Desired}
			b.event(ctx, fmt.Sprintf("patch-%s-%d", name, applied), "running",
				fmt.Sprintf("%s: %s -> %s (conflicts retried: %d)", name, r.Plan.Current.Ref(), r.Plan.Desired.Ref(), r.Conflicts))
			if err := workflow.Sleep(ctx, b.in.SettleInterval); err != nil {
				return
			}
		case activities.ReconcileNeedsPatch:
			msg := fmt.Sprintf("another actor is reverting this MachineSet: the same patch (%s) was applied %d times", r.Plan.Desired.Ref(), applied)
			b.result.HotLoop = append(b.result.HotLoop, name)
			b.failMember(name, bumpReasonHotLoop, msg)
			b.event(ctx, "hotloop-"+name, "failed", msg)
			return
		case string(machineapi.ActionUpToDate):
			if applied > 0 || p.Action == machineapi.ActionPatch {
				b.result.Patched = append(b.result.Patched, name)
			} else {
				b.result.UpToDate = append(b.result.UpToDate, name)
			}
			b.done("done")
			return
		case string(machineapi.ActionSkip):
			b.skip(r.Plan)
			return
		default:
			b.failMember(name, string(r.Plan.Reason), r.Plan.Detail)
			return
		}
	}
}

// restoreImage puts previous back on a MachineSet that still has applied.
func (b *bootImageBump) restoreImage(ctx workflow.Context, name string, previous, applied machineapi.BootImage) error {
	var a *activities.BootImageActivities
	var out string
	err := workflow.ExecuteActivity(bumpAPIOptions(ctx, "restore boot image of "+name), a.RestoreBootImage, activities.BootImageRestoreInput{
		Cluster: b.in.Cluster, MachineSet: name, Previous: previous, Applied: applied,
	}).Get(ctx, &out)
	if err != nil {
		out = "error: " + err.Error()
	}
	b.result.Restored = append(b.result.Restored, name+": "+out)
	b.event(ctx, "restore-"+name, "running", name+": "+out)
	return err
}

// canary scales one patched MachineSet up by one and waits for the machine.
func (b *bootImageBump) canary(ctx workflow.Context) (bool, error) {
	b.life.Phase(ctx, bumpPhaseCanary)
	name := b.in.Canary.MachineSet
	if name == "" && len(b.result.Patched) == 0 {
		name = b.adoptedCanary() // adopted patches were never proven
	}
	if name == "" {
		if len(b.result.Patched) == 0 {
			b.event(ctx, "canary", "running", "no MachineSet was patched: no canary needed")
			return true, nil
		}
		name = b.result.Patched[0]
	}
	report := &BootImageCanaryReport{MachineSet: name}
	b.result.Canary = report
	imgs, ok := b.applied[name]
	if !ok || !contains(b.result.Patched, name) {
		if contains(b.result.UpToDate, name) {
			report.Detail = "already on the golden image before this run"
		} else {
			report.Detail = "the canary MachineSet was not reconciled by this run"
			return false, nil
		}
	}
	var a *activities.BootImageActivities
	var base activities.CanaryBaseline
	cin := activities.BootImageCanaryInput{Cluster: b.in.Cluster, MachineSet: name}
	if err := workflow.ExecuteActivity(bumpAPIOptions(ctx, "canary baseline of "+name), a.CanaryBaseline, cin).Get(ctx, &base); err != nil {
		return false, err
	}
	if !ok { // up to date already: its image is the golden one it has now
		var r activities.BootImageReconcileResult
		if err := workflow.ExecuteActivity(bumpAPIOptions(ctx, "read image of "+name), a.ReconcileBootImage, activities.BootImageReconcileInput{
			Cluster: b.in.Cluster, MachineSet: name, Release: b.snap.Release, CheckOnly: true,
		}).Get(ctx, &r); err != nil {
			return false, err
		}
		imgs = [2]machineapi.BootImage{r.Plan.Current, r.Plan.Desired}
	}
	scale := func(ctx workflow.Context, from, to int32) error {
		return workflow.ExecuteActivity(b.bumpChangeOptions(ctx, fmt.Sprintf("scale %s %d -> %d", name, from, to)), a.ScaleMachineSet, activities.BootImageScaleInput{
			Cluster: b.in.Cluster, MachineSet: name, From: from, To: to,
		}).Get(ctx, nil)
	}
	up := base.Replicas + 1
	b.life.beforeAction("scale canary "+name+" back down", func(ctx workflow.Context) error {
		return b.scaleDown(ctx, activities.BootImageScaleInput{Cluster: b.in.Cluster, MachineSet: name, From: up, To: base.Replicas})
	})
	stored, err := b.recordChange(ctx, activities.BootImageChange{MachineSet: name, Change: ledger.BootImageChangeScale, PreviousReplicas: base.Replicas, ScaledReplicas: up})
	if err != nil {
		return false, err
	}
	// A run reset after its canary scaled up reads the scaled replicas as
	// the baseline: the ledger's original stands.
	base.Replicas, up = stored.PreviousReplicas, stored.PreviousReplicas+1
	if err := scale(ctx, base.Replicas, up); err != nil {
		return false, err
	}
	b.event(ctx, "canary-up", "running", fmt.Sprintf("%s scaled %d -> %d to boot %s", name, base.Replicas, up, imgs[1].Ref()))
	var res activities.CanaryResult
	err = workflow.ExecuteActivity(bumpWaitOptions(ctx, b.in.Canary.Timeout, "wait for the canary machine of "+name), a.WaitCanaryJoin, activities.BootImageCanaryWaitInput{
		Cluster: b.in.Cluster, MachineSet: name, Baseline: base.Machines, Image: imgs[1],
		Deadline: workflow.Now(ctx).Add(b.in.Canary.Timeout), PollInterval: b.in.PollInterval,
	}).Get(ctx, &res)
	if err != nil {
		return false, err
	}
	report.Joined, report.Machine, report.Detail = res.Joined, res.Machine, res.Detail
	b.event(ctx, "canary", map[bool]string{true: "running", false: "failed"}[res.Joined], fmt.Sprintf("%s: machine %s: %s", name, res.Machine, res.Detail))
	if !res.Joined {
		return false, nil
	}
	// Proven: the canary machine goes away again (it was a proof, not capacity).
	if err := scale(ctx, up, base.Replicas); err != nil {
		return false, err
	}
	return true, nil
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// rollingBack announces the rollback; the ending runs the compensations
// (restore every MachineSet patched in this run, scale the canary down).
func (b *bootImageBump) rollingBack(ctx workflow.Context) {
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	b.life.Phase(dctx, bumpPhaseRollingBack)
	b.life.lastUndo("undo the changes the ledger holds for this attempt", b.undoRecorded)
}

// record notes whether every selected MachineSet reconciled cleanly. The
// machine-config operator records the boot image version
// (status.bootImageSkewEnforcementStatus) itself once the MachineSets are
// current; a second writer would fight it.
func (b *bootImageBump) record(ctx workflow.Context) {
	clean := b.in.Selection != SelectNone && len(b.result.Skipped) == 0 && len(b.result.Failed) == 0
	if !clean {
		b.event(ctx, "record", "running", fmt.Sprintf("boot image version stays %s: %d skipped, %d failed",
			b.snap.Record.OCPVersion, len(b.result.Skipped), len(b.result.Failed)))
		return
	}
	b.event(ctx, "record", "running", "every selected MachineSet is current; the machine-config operator records the boot image version")
}

// enforceSkew evaluates the skew from the operator's own record and mode
// (MachineConfiguration status.bootImageSkewEnforcementStatus) for the
// report only: the Upgradeable condition is the operator's to set.
func (b *bootImageBump) enforceSkew(ctx workflow.Context) {
	b.life.Phase(ctx, bumpPhaseSkew)
	mode := b.snap.Record.Mode
	if mode == "" {
		mode = SkewAutomatic
	}
	v := EvaluateSkew(SkewCheck{
		Mode:              mode,
		BootOCPVersion:    b.snap.Record.OCPVersion,
		BootRHCOSVersion:  b.snap.Record.RHCOSVersion,
		LimitOCPVersion:   b.snap.SkewLimitOCPVersion,
		LimitRHCOSVersion: b.snap.SkewLimitRHCOSVersion,
		Release:           b.snap.Release,
		ReleaseOSVersion:  b.snap.OSVersion,
	})
	b.result.Skew = v
	b.event(ctx, "skew", "running", fmt.Sprintf("operator's record %s (%s): upgradeable=%v (%s): %s; Upgradeable is the operator's to set",
		b.snap.Record.OCPVersion+b.snap.Record.RHCOSVersion, mode, v.Upgradeable, v.Reason, v.Message))
}

// end ends the bump through the lifecycle: compensations (if any are
// left), the ledger end with the summary, the search state.
func (b *bootImageBump) end(ctx workflow.Context, err error) error {
	b.progress.Counts["running"] = 0
	summary := fmt.Sprintf("%s: %d patched, %d up to date, %d skipped, %d failed; upgradeable=%v (%s)",
		b.result.Outcome, len(b.result.Patched), len(b.result.UpToDate), len(b.result.Skipped), len(b.result.Failed),
		b.result.Skew.Upgradeable, b.result.Skew.Reason)
	err = b.life.End(ctx, err, Ending{Outcome: summary, FailedOutcome: summary, Phase: bumpPhaseDone})
	sort.Strings(b.result.Restored)
	return err
}

// fail ends the bump as failed. Only a failed canary rolls this run's
// patches back (DESIGN.md §3.4); other failures keep the MachineSets that
// reached the golden image.
func (b *bootImageBump) fail(ctx workflow.Context, outcome string, err error) (BootImageBumpResult, error) {
	if ctx.Err() != nil {
		return b.cancelled(ctx)
	}
	if outcome == "CanaryFailed" {
		b.rollingBack(ctx)
	} else {
		b.life.nothingToUndo()
	}
	b.result.Outcome = outcome
	_ = b.end(ctx, err)
	return b.result, temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("boot image bump of %s: %s: %v", b.in.Cluster, outcome, err), "BootImageBump"+outcome, err, b.result)
}

// cancelled undoes this run's patches and canary, then ends as cancelled.
func (b *bootImageBump) cancelled(ctx workflow.Context) (BootImageBumpResult, error) {
	b.rollingBack(ctx)
	b.result.Outcome = "Cancelled"
	_ = b.end(ctx, temporal.NewCanceledError())
	return b.result, temporal.NewCanceledError(b.result)
}
