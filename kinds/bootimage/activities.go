package bootimage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// conflictRetries bounds fresh-read retries of a patch inside one activity
// execution; beyond it the activity fails (retryably) and Temporal backs off.
const conflictRetries = 5

// BootImageActivities drive the machine API of clusters for the boot image
// bump. Every activity is idempotent: it re-reads the live state and acts
// only on what still needs doing.
type BootImageActivities struct {
	// Kube says how each cluster is reached (kubeconfig context, in-cluster
	// config, or a multi-cluster base URL).
	Kube machineapi.Access
	// HTTP is shared by base-URL clients only.
	HTTP *http.Client
	// Store records each change before it is made, so that a run that
	// takes over an abandoned bump can undo it (bootimage_changes.go).
	Store *ledger.Store

	mu      sync.Mutex
	clients map[string]*machineapi.Client
	amis    amiCache
}

func (a *BootImageActivities) client(cluster string) (*machineapi.Client, error) {
	if cluster == "" {
		return nil, temporal.NewNonRetryableApplicationError("cluster is required", failure.BootImageInvalid, nil)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.clients[cluster]; c != nil {
		return c, nil
	}
	c, err := a.Kube.Client(cluster, a.HTTP)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), failure.BootImageInvalid, err)
	}
	if a.clients == nil {
		a.clients = map[string]*machineapi.Client{}
	}
	a.clients[cluster] = c
	return c, nil
}

// classify decides retry vs fatal for machine API errors in one place.
func classifyKube(err error) error {
	switch {
	case err == nil:
		return nil
	case machineapi.IsMalformed(err):
		return temporal.NewNonRetryableApplicationError(err.Error(), failure.BootImageMalformed, err)
	case machineapi.IsNotFound(err):
		return temporal.NewNonRetryableApplicationError(err.Error(), failure.BootImageNotFound, err)
	}
	return err // transient, conflicts, unknown: retry with backoff
}

// BootImagePreconditionsInput asks to wait until the cluster can be bumped.
type BootImagePreconditionsInput struct {
	Cluster string `json:"cluster"`
	// Release, when set, must be the cluster's desired release.
	Release string `json:"release,omitempty"`
	// Deadline bounds the whole wait across activity retries.
	Deadline     time.Time     `json:"deadline"`
	PollInterval time.Duration `json:"pollInterval"`
}

// BootImageSnapshot is the cluster as the bump starts.
type BootImageSnapshot struct {
	Status  machineapi.ClusterStatus `json:"status"`
	Release string                   `json:"release"`
	// OSVersion is the golden RHCOS build (control plane arch).
	OSVersion             string                     `json:"osVersion"`
	SkewLimitOCPVersion   string                     `json:"skewLimitOCPVersion,omitempty"`
	SkewLimitRHCOSVersion string                     `json:"skewLimitRHCOSVersion,omitempty"`
	Record                machineapi.BootImageRecord `json:"record"`
	Waited                []string                   `json:"waited,omitempty"`
}

// WaitBootImagePreconditions polls (heartbeating) until the cluster is not
// installing/upgrading and the golden record is stamped for its current
// release, or fails non-retryably at the deadline.
func (a *BootImageActivities) WaitBootImagePreconditions(ctx context.Context, in BootImagePreconditionsInput) (BootImageSnapshot, error) {
	c, err := a.client(in.Cluster)
	if err != nil {
		return BootImageSnapshot{}, err
	}
	var waited []string
	note := func(s string) {
		if len(waited) == 0 || waited[len(waited)-1] != s {
			waited = append(waited, s)
		}
	}
	var why string
	var snap BootImageSnapshot
	late, err := pollUntil(ctx, pollEvery(in.PollInterval), in.Deadline, func() (bool, error) {
		var err error
		why, snap, err = a.preconditions(ctx, c, in.Release)
		if err != nil {
			if errors.Is(err, errReleaseMismatch) {
				return false, temporal.NewNonRetryableApplicationError(err.Error(), failure.BootImageRelease, nil)
			}
			if cerr := classifyKube(err); cerr != err {
				return false, cerr
			}
			why = "machine API: " + err.Error() // transient: keep waiting
		}
		if why == "" {
			return true, nil
		}
		note(why)
		activity.RecordHeartbeat(ctx, why)
		return false, nil
	})
	switch {
	case err != nil:
		return BootImageSnapshot{}, err
	case late:
		return BootImageSnapshot{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("cluster %s: gave up waiting at %s: %s", in.Cluster, in.Deadline.UTC().Format(time.RFC3339), why),
			failure.BootImagePrecondition, nil)
	}
	snap.Waited = waited
	return snap, nil
}

var errReleaseMismatch = errors.New("release mismatch")

// preconditions returns why the bump must wait ("" = go) and the snapshot.
func (a *BootImageActivities) preconditions(ctx context.Context, c *machineapi.Client, release string) (string, BootImageSnapshot, error) {
	var snap BootImageSnapshot
	st, err := c.ClusterStatus(ctx)
	if err != nil {
		return "", snap, err
	}
	if st.Upgrading() {
		return fmt.Sprintf("cluster is installing or upgrading to %s (history[0].state %q)", st.DesiredVersion, st.LatestState), snap, nil
	}
	if release != "" && st.DesiredVersion != release {
		return "", snap, fmt.Errorf("%w: cluster %s runs %s, the bump asked for %s", errReleaseMismatch, c.Cluster, st.DesiredVersion, release)
	}
	g, err := c.GoldenRecord(ctx)
	if err != nil {
		return "", snap, err
	}
	if !g.StampedFor(st.DesiredVersion) {
		return fmt.Sprintf("golden boot image record is stamped for %s/%s, not the current release %s",
			g.ReleaseVersion, g.MCOReleaseImageVersion, st.DesiredVersion), snap, nil
	}
	rec, err := c.BootImageRecord(ctx)
	if err != nil {
		return "", snap, err
	}
	arch := st.ControlPlaneArch
	if arch == "" {
		arch = "amd64"
	}
	osv := g.Stream.OSVersion(arch)
	if osv == "" {
		osv = g.Stream.AnyOSVersion()
	}
	return "", BootImageSnapshot{
		Status: st, Release: st.DesiredVersion, OSVersion: osv,
		SkewLimitOCPVersion: g.SkewLimitOCPVersion, SkewLimitRHCOSVersion: g.SkewLimitRHCOSVersion,
		Record: rec,
	}, nil
}

// BootImagePlanInput selects the MachineSets to plan.
type BootImagePlanInput struct {
	Cluster string `json:"cluster"`
	Release string `json:"release"`
	// FromCluster reads the opt-in from the cluster's MachineConfiguration
	// (spec.managedBootImages, as the operator resolved it); Selection and
	// Selector are then ignored. Runs started before this field pass them.
	FromCluster bool `json:"fromCluster,omitempty"`
	// Selection: All, Partial (Selector) or None.
	Selection string `json:"selection"`
	Selector  string `json:"selector,omitempty"`
}

// BootImagePlanResult is one plan per selected MachineSet, sorted by name.
type BootImagePlanResult struct {
	Plans []machineapi.Plan `json:"plans"`
	// OptIn is the selection that was applied.
	OptIn machineapi.OptIn `json:"optIn"`
	// MCOManaged are the selected MachineSets the MCO's boot image
	// controller owns (OptIn.ManagedByMCO): planned Skip (ManagedByMCO)
	// when they differ from the golden image, never patched by fleetsaga.
	MCOManaged []string `json:"mcoManaged,omitempty"`
	// MCO: the MCO's boot image controller owns the selection (decided
	// here, not by the workflow, so histories of earlier runs replay).
	MCO bool `json:"mco,omitempty"`
}

// PlanBootImages lists the selected MachineSets and decides for each.
func (a *BootImageActivities) PlanBootImages(ctx context.Context, in BootImagePlanInput) (BootImagePlanResult, error) {
	var out BootImagePlanResult
	c, err := a.client(in.Cluster)
	if err != nil {
		return out, err
	}
	out.OptIn = machineapi.OptIn{Mode: in.Selection, Selector: in.Selector, Source: "input"}
	if in.FromCluster {
		if out.OptIn, err = c.BootImageOptIn(ctx); err != nil {
			return out, classifyKube(err)
		}
	}
	selector := out.OptIn.Selector
	switch out.OptIn.Mode {
	case "All":
	case "Partial":
		if selector == "" && !in.FromCluster {
			return out, temporal.NewNonRetryableApplicationError("Partial selection needs a label selector", failure.BootImageInvalid, nil)
		}
	case "None":
		return out, nil
	default:
		return out, temporal.NewNonRetryableApplicationError(fmt.Sprintf("unknown selection %q", out.OptIn.Mode), failure.BootImageInvalid, nil)
	}
	golden, st, err := a.readContext(ctx, c, in.Release)
	if err != nil {
		return out, err
	}
	sets, bad, err := c.ListMachineSets(ctx, selector)
	if err != nil {
		if machineapi.IsTransient(err) || machineapi.IsConflict(err) {
			return out, err
		}
		// A bad selector is the operator's error, not a transient one.
		return out, temporal.NewNonRetryableApplicationError(err.Error(), failure.BootImageInvalid, err)
	}
	mco := in.FromCluster && out.OptIn.ManagedByMCO()
	out.MCO = mco
	var amis machineapi.AMIOrigins
	if !mco { // the MCO asks EC2 about its own MachineSets
		if amis, err = a.amiOrigins(ctx, c, sets, st); err != nil {
			return out, err
		}
	}
	for _, ms := range sets {
		var p machineapi.Plan
		if mco {
			p = machineapi.PlanMCOManaged(ms, golden, st)
		} else {
			p = machineapi.PlanMachineSet(ms, golden, amis, st)
			if p, err = refuseOldStub(ctx, c, ms, p); err != nil {
				return out, err
			}
		}
		if mco && (p.Action == machineapi.ActionPatch || p.Action == machineapi.ActionUpToDate) {
			// The MCO enrolls what the opt-in selects and it does not skip
			// (the same skips as PlanMachineSet's): its MachineSet.
			out.MCOManaged = append(out.MCOManaged, p.MachineSet)
			if p.Action == machineapi.ActionPatch {
				p.Action, p.Reason = machineapi.ActionSkip, machineapi.ReasonManagedByMCO
				p.Detail = fmt.Sprintf("the MCO's boot image controller patches it to %s itself (MachineConfiguration %s, %s)",
					p.Desired.Ref(), out.OptIn.Source, out.OptIn.Mode)
			}
		}
		out.Plans = append(out.Plans, p)
	}
	sort.Strings(out.MCOManaged)
	for name, perr := range bad {
		out.Plans = append(out.Plans, machineapi.Plan{MachineSet: name, Action: machineapi.ActionRefuse, Reason: machineapi.ReasonMalformed, Detail: perr.Error()})
	}
	sort.Slice(out.Plans, func(i, j int) bool { return out.Plans[i].MachineSet < out.Plans[j].MachineSet })
	return out, nil
}

// refuseOldStub refuses a planned patch of a MachineSet whose user-data
// Ignition stub is older than spec 3: the MCO converts it before every
// patch (machine-config-operator pkg/controller/bootimage/helpers.go,
// upgradeStubIgnitionIfRequired); fleetsaga does not (docs/GAPS.md).
func refuseOldStub(ctx context.Context, c *machineapi.Client, ms *machineapi.MachineSet, p machineapi.Plan) (machineapi.Plan, error) {
	if p.Action != machineapi.ActionPatch {
		return p, nil
	}
	ok, why, err := c.StubIgnitionSpec3(ctx, ms)
	if err != nil {
		return p, classifyKube(err)
	}
	if !ok {
		p.Action, p.Reason, p.Detail = machineapi.ActionRefuse, machineapi.ReasonIgnitionStub, why
	}
	return p, nil
}

// readContext reads the golden record (which must still be stamped for
// release) and the cluster status.
func (a *BootImageActivities) readContext(ctx context.Context, c *machineapi.Client, release string) (*machineapi.Golden, machineapi.ClusterStatus, error) {
	st, err := c.ClusterStatus(ctx)
	if err != nil {
		return nil, st, classifyKube(err)
	}
	golden, err := c.GoldenRecord(ctx)
	if err != nil {
		return nil, st, classifyKube(err)
	}
	if !golden.StampedFor(release) || st.DesiredVersion != release {
		return nil, st, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("cluster %s moved on: runs %s, golden record stamped for %s, bump is for %s", c.Cluster, st.DesiredVersion, golden.ReleaseVersion, release),
			failure.BootImageRelease, nil)
	}
	return golden, st, nil
}

// BootImageReconcileInput reconciles one MachineSet.
type BootImageReconcileInput struct {
	Cluster    string `json:"cluster"`
	MachineSet string `json:"machineSet"`
	Release    string `json:"release"`
	// CheckOnly: report whether a patch is needed, do not patch (the
	// hot-loop guard's last look).
	CheckOnly bool `json:"checkOnly,omitempty"`
}

// Reconcile outcomes beyond the plan actions.
const (
	ReconcilePatched    = "Patched"
	ReconcileNeedsPatch = "NeedsPatch"
)

// BootImageReconcileResult says what happened.
type BootImageReconcileResult struct {
	// Action: Patched, NeedsPatch (CheckOnly), or the plan's UpToDate / Skip / Refuse.
	Action    string          `json:"action"`
	Plan      machineapi.Plan `json:"plan"`
	Conflicts int             `json:"conflicts,omitempty"`
}

// ReconcileBootImage re-reads the MachineSet, re-plans it and patches it to
// the golden image if it still differs, with the read resourceVersion; a
// conflict is retried on a fresh read.
func (a *BootImageActivities) ReconcileBootImage(ctx context.Context, in BootImageReconcileInput) (BootImageReconcileResult, error) {
	var res BootImageReconcileResult
	c, err := a.client(in.Cluster)
	if err != nil {
		return res, err
	}
	golden, st, err := a.readContext(ctx, c, in.Release)
	if err != nil {
		return res, err
	}
	err = changeOnFreshRead(ctx, c, in.MachineSet, "", "patching", func(ms *machineapi.MachineSet) (func() error, error) {
		amis, err := a.amiOrigins(ctx, c, []*machineapi.MachineSet{ms}, st)
		if err != nil {
			return nil, err
		}
		res.Plan = machineapi.PlanMachineSet(ms, golden, amis, st)
		if res.Plan, err = refuseOldStub(ctx, c, ms, res.Plan); err != nil {
			return nil, err
		}
		switch {
		case res.Plan.Action != machineapi.ActionPatch:
			res.Action = string(res.Plan.Action)
			return nil, nil
		case in.CheckOnly:
			res.Action = ReconcileNeedsPatch
			return nil, nil
		}
		return func() error {
			_, err := c.PatchImage(ctx, ms, res.Plan.Desired)
			switch {
			case machineapi.IsConflict(err):
				res.Conflicts++
				activity.RecordHeartbeat(ctx, fmt.Sprintf("conflict %d on %s, re-reading", res.Conflicts, in.MachineSet))
			case err == nil:
				res.Action = ReconcilePatched
			}
			return err
		}, nil
	})
	return res, err
}

// BootImageRestoreInput puts a MachineSet back on its previous image.
type BootImageRestoreInput struct {
	Cluster    string               `json:"cluster"`
	MachineSet string               `json:"machineSet"`
	Previous   machineapi.BootImage `json:"previous"`
	Applied    machineapi.BootImage `json:"applied"`
}

// Restore outcomes.
const (
	RestoreDone      = "restored"
	RestoreUnchanged = "unchanged"       // it already boots the previous image (our patch never landed or was reverted)
	RestoreLeft      = "left-as-is"      // someone else changed it since: not ours to undo
	RestoreGone      = "machineset-gone" // deleted meanwhile
)

// RestoreBootImage restores Previous when the MachineSet still has the image
// this run applied; anything else is left alone and reported.
func (a *BootImageActivities) RestoreBootImage(ctx context.Context, in BootImageRestoreInput) (string, error) {
	c, err := a.client(in.Cluster)
	if err != nil {
		return "", err
	}
	for try := 0; try < conflictRetries; try++ {
		ms, err := c.GetMachineSet(ctx, in.MachineSet)
		if machineapi.IsNotFound(err) {
			return RestoreGone, nil
		}
		if err != nil {
			return "", classifyKube(err)
		}
		cur, err := ms.Image()
		if err != nil {
			return "", classifyKube(err)
		}
		switch {
		case cur.Equal(in.Previous):
			return RestoreUnchanged, nil
		case !cur.Equal(in.Applied):
			return RestoreLeft, nil
		}
		_, err = c.PatchImage(ctx, ms, in.Previous)
		if machineapi.IsConflict(err) {
			continue
		}
		if err != nil {
			return "", classifyKube(err)
		}
		return RestoreDone, nil
	}
	return "", fmt.Errorf("machineset %s: restore still conflicting after %d fresh reads", in.MachineSet, conflictRetries)
}
