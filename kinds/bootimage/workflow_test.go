package bootimage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// fakeCluster stands in for the machine API behind the boot image
// activities: each MachineSet has a current image; reconcile patches it to
// golden, and a "reverting" one goes back after every patch.
type fakeCluster struct {
	mu        sync.Mutex
	golden    machineapi.BootImage
	images    map[string]machineapi.BootImage
	plans     []machineapi.Plan
	reverting map[string]bool
	patches   map[string]int
	checks    map[string]int
	restores  []string
	scales    [][2]int32
	canary    CanaryResult
	snap      BootImageSnapshot
	planIn    *BootImagePlanInput
	// optIn is the cluster's MachineConfiguration opt-in (default All).
	optIn machineapi.OptIn
	// baseline is the canary MachineSet's replicas (default 1).
	baseline int32
	// adopted are the abandoned bumps' changes the ledger hands over;
	// changes are the ones this run wrote; ops is the order of writes and
	// device changes ("record image ms-a", "patch ms-a", "scale ms-a 1->2").
	adopted []BootImageChange
	changes []BootImageChange
	ops     []string
}

func ami(id string) machineapi.BootImage {
	return machineapi.BootImage{Platform: machineapi.PlatformAWS, AMI: id, Region: "us-east-1"}
}

func newFake() *fakeCluster {
	f := &fakeCluster{
		golden:    ami("ami-new"),
		images:    map[string]machineapi.BootImage{},
		reverting: map[string]bool{},
		patches:   map[string]int{},
		checks:    map[string]int{},
		baseline:  1,
		canary:    CanaryResult{Joined: true, Machine: "m-1", Detail: "joined"},
		optIn:     machineapi.OptIn{Mode: machineapi.OptInAll, Source: "status.managedBootImagesStatus"},
		snap: BootImageSnapshot{
			Release: "4.19.2", OSVersion: "9.6.20250523-0",
			SkewLimitOCPVersion: "4.16.0", SkewLimitRHCOSVersion: "9.4",
			Record: machineapi.BootImageRecord{Mode: "Automatic", OCPVersion: "4.14.3", RHCOSVersion: "9.2.20231001-0"},
		},
	}
	return f
}

// add adds a MachineSet planned with action (patch plans start on ami-old).
func (f *fakeCluster) add(name string, action machineapi.Action, reason machineapi.Reason) {
	p := machineapi.Plan{MachineSet: name, Action: action, Reason: reason, Arch: "amd64"}
	switch action {
	case machineapi.ActionPatch:
		f.images[name] = ami("ami-old")
		p.Current, p.Desired = ami("ami-old"), f.golden
	case machineapi.ActionUpToDate:
		f.images[name] = f.golden
		p.Current, p.Desired = f.golden, f.golden
	}
	f.plans = append(f.plans, p)
}

func (f *fakeCluster) env(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(BootImageBump)
	var l *activities.LedgerActivities
	var a *BootImageActivities
	env.RegisterActivity(l)
	env.RegisterActivity(a)
	env.OnActivity(l.RecordIntent, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(l.SetProgress, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(l.AppendEvent, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(l.FinishAttempt, mock.Anything, mock.Anything).Return(func(_ context.Context, fin ledger.Finish) error { return nil })
	env.OnActivity(a.RecordBootImageChange, mock.Anything, mock.Anything).Return(
		func(_ context.Context, c BootImageChange) (BootImageChange, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if c.AttemptID == uuid.Nil {
				return c, errors.New("a change without its attempt")
			}
			stored := c
			c.AttemptID = uuid.Nil // the run's: compared without it
			f.changes = append(f.changes, c)
			f.ops = append(f.ops, "record "+string(c.Change)+" "+c.MachineSet)
			return stored, nil
		})
	// The rollback's sweep of the ledger: these runs were never reset, so
	// their own undos leave it nothing to do (the real stack and chaos
	// cover a reset run).
	env.OnActivity(a.BootImageChanges, mock.Anything, mock.Anything).Return(
		func(context.Context, uuid.UUID) ([]BootImageChange, error) { return nil, nil })
	env.OnActivity(a.AdoptBootImageChanges, mock.Anything, mock.Anything).Return(
		func(context.Context, uuid.UUID) ([]BootImageChange, error) { return f.adopted, nil })
	env.OnActivity(a.WaitBootImagePreconditions, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in BootImagePreconditionsInput) (BootImageSnapshot, error) {
			return f.snap, nil
		})
	env.OnActivity(a.PlanBootImages, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in BootImagePlanInput) (BootImagePlanResult, error) {
			f.planIn = &in
			opt := machineapi.OptIn{Mode: in.Selection, Selector: in.Selector, Source: "input"}
			if in.FromCluster {
				opt = f.optIn
			}
			if opt.Mode == SelectNone {
				return BootImagePlanResult{OptIn: opt}, nil
			}
			return BootImagePlanResult{Plans: f.plans, OptIn: opt}, nil
		})
	env.OnActivity(a.ReconcileBootImage, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in BootImageReconcileInput) (BootImageReconcileResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			cur := f.images[in.MachineSet]
			p := machineapi.Plan{MachineSet: in.MachineSet, Current: cur, Desired: f.golden, Action: machineapi.ActionPatch}
			if cur.Equal(f.golden) {
				p.Action = machineapi.ActionUpToDate
				return BootImageReconcileResult{Action: string(p.Action), Plan: p}, nil
			}
			if in.CheckOnly {
				f.checks[in.MachineSet]++
				return BootImageReconcileResult{Action: ReconcileNeedsPatch, Plan: p}, nil
			}
			f.patches[in.MachineSet]++
			f.ops = append(f.ops, "patch "+in.MachineSet)
			if !f.reverting[in.MachineSet] {
				f.images[in.MachineSet] = f.golden
			}
			return BootImageReconcileResult{Action: ReconcilePatched, Plan: p}, nil
		})
	env.OnActivity(a.RestoreBootImage, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in BootImageRestoreInput) (string, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.restores = append(f.restores, in.MachineSet)
			if f.images[in.MachineSet].Equal(in.Applied) {
				f.images[in.MachineSet] = in.Previous
				return RestoreDone, nil
			}
			return RestoreUnchanged, nil
		})
	env.OnActivity(a.CanaryBaseline, mock.Anything, mock.Anything).Return(
		func(context.Context, BootImageCanaryInput) (CanaryBaseline, error) {
			return CanaryBaseline{Replicas: f.baseline, Machines: []string{"m-0"}}, nil
		})
	env.OnActivity(a.ScaleMachineSet, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in BootImageScaleInput) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.ops = append(f.ops, fmt.Sprintf("scale %s %d->%d", in.MachineSet, in.From, in.To))
			f.scales = append(f.scales, [2]int32{in.From, in.To})
			return nil
		})
	env.OnActivity(a.WaitCanaryJoin, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in BootImageCanaryWaitInput) (CanaryResult, error) {
			return f.canary, nil
		})
	return env
}

func bumpInput() BootImageBumpInput {
	return BootImageBumpInput{Cluster: "c1", SettleInterval: time.Second, PollInterval: time.Second}
}

func runBump(t *testing.T, env *testsuite.TestWorkflowEnvironment, in BootImageBumpInput) (BootImageBumpResult, error) {
	t.Helper()
	env.ExecuteWorkflow(BootImageBump, in)
	require.True(t, env.IsWorkflowCompleted())
	var res BootImageBumpResult
	err := env.GetWorkflowError()
	if err == nil {
		require.NoError(t, env.GetWorkflowResult(&res))
	} else {
		var app *temporal.ApplicationError
		var can *temporal.CanceledError
		switch {
		case errors.As(err, &app) && app.HasDetails():
			require.NoError(t, app.Details(&res))
		case errors.As(err, &can) && can.HasDetails():
			require.NoError(t, can.Details(&res))
		}
	}
	return res, err
}

// The opt-in comes from the cluster; the boot image record and the
// Upgradeable condition are the machine-config operator's: the bump
// reports the skew from the operator's record and writes neither.
func TestBootImageBumpHappyPathLeavesOperatorStatus(t *testing.T) {
	f := newFake()
	f.add("ms-a", machineapi.ActionPatch, "")
	f.add("ms-b", machineapi.ActionPatch, "")
	f.add("ms-c", machineapi.ActionUpToDate, "")
	env := f.env(t)
	res, err := runBump(t, env, bumpInput())
	require.NoError(t, err)
	assert.Equal(t, "Reconciled", res.Outcome)
	assert.Equal(t, []string{"ms-a", "ms-b"}, res.Patched)
	assert.Equal(t, []string{"ms-c"}, res.UpToDate)
	// The operator's record (4.14.3) is still below the limit (4.16.0).
	assert.False(t, res.Skew.Upgradeable, "%+v", res.Skew)
	assert.Equal(t, ReasonSkewError, res.Skew.Reason)
	assert.Equal(t, 1, f.patches["ms-a"])
	assert.Empty(t, f.restores)
	assert.True(t, f.planIn.FromCluster)
	require.NotNil(t, res.OptIn)
	assert.Equal(t, "All", res.OptIn.Mode)

	var p BootImageProgress
	v, err := env.QueryWorkflow(workflows.ProgressQuery)
	require.NoError(t, err)
	require.NoError(t, v.Get(&p))
	assert.Equal(t, workflows.StateCompleted, p.State)
	assert.Equal(t, int64(3), p.Done)
	assert.Equal(t, int64(3), p.Total)
	assert.Equal(t, 3, p.Counts["done"])
}

func TestBootImageBumpSkipsKeepRecordAndSkewBlocks(t *testing.T) {
	f := newFake()
	f.add("ms-a", machineapi.ActionPatch, "")
	for _, r := range []machineapi.Reason{machineapi.ReasonOwned, machineapi.ReasonWindows, machineapi.ReasonUnsupportedOSStream,
		machineapi.ReasonCustomImage, machineapi.ReasonNoArch} {
		f.add("skip-"+string(r), machineapi.ActionSkip, r)
	}
	env := f.env(t)
	res, err := runBump(t, env, bumpInput())
	require.NoError(t, err, "skips are not errors")
	assert.Equal(t, "ReconciledWithSkips", res.Outcome)
	assert.Len(t, res.Skipped, 5)
	assert.Equal(t, []string{"ms-a"}, res.Patched)
	// The old record (4.14.3) is below the limit (4.16.0): a skip must not
	// let the cluster pass the skew check.
	assert.False(t, res.Skew.Upgradeable)
	assert.Equal(t, ReasonSkewError, res.Skew.Reason)
	assert.Contains(t, res.Skew.Message, "4.14.3")
}

func TestBootImageBumpHotLoopGuard(t *testing.T) {
	f := newFake()
	f.add("ms-a", machineapi.ActionPatch, "")
	f.add("ms-thrash", machineapi.ActionPatch, "")
	f.reverting["ms-thrash"] = true
	env := f.env(t)
	res, err := runBump(t, env, bumpInput())
	require.Error(t, err)
	assert.Equal(t, 3, f.patches["ms-thrash"], "the same patch is applied 3 times, then no more")
	assert.Equal(t, 1, f.checks["ms-thrash"])
	assert.Equal(t, []string{"ms-thrash"}, res.HotLoop)
	require.Len(t, res.Failed, 1)
	assert.Equal(t, "HotLoop", res.Failed[0].Reason)
	assert.Contains(t, res.Failed[0].Detail, "another actor")
	assert.Equal(t, []string{"ms-a"}, res.Patched)
	assert.Empty(t, f.restores, "a hot loop is reported, not rolled back")

	f2 := newFake()
	f2.add("ms-thrash", machineapi.ActionPatch, "")
	f2.reverting["ms-thrash"] = true
	in := bumpInput()
	in.HotLoopLimit = 5
	_, err = runBump(t, f2.env(t), in)
	require.Error(t, err)
	assert.Equal(t, 5, f2.patches["ms-thrash"])
}

func TestBootImageBumpRefusedAndSelectionNone(t *testing.T) {
	f := newFake()
	f.add("ms-rhel10", machineapi.ActionRefuse, machineapi.ReasonRHELMajorMismatch)
	res, err := runBump(t, f.env(t), bumpInput())
	require.Error(t, err)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, "BootImageBumpFailed", app.Type())
	require.Len(t, res.Failed, 1)
	assert.Equal(t, "RHELMajorMismatch", res.Failed[0].Reason)

	// The cluster opted out: the input's selection does not override it.
	f = newFake()
	f.add("ms-a", machineapi.ActionPatch, "")
	f.optIn = machineapi.OptIn{Mode: machineapi.OptInNone, Source: "spec.managedBootImages"}
	f.snap.Record.Mode = SkewNone
	in := bumpInput()
	in.Selection = SelectAll
	res, err = runBump(t, f.env(t), in)
	require.NoError(t, err)
	assert.Equal(t, "NothingSelected", res.Outcome)
	assert.Zero(t, f.patches["ms-a"])
	assert.True(t, res.Skew.Upgradeable)
	assert.Equal(t, ReasonSkewDisabled, res.Skew.Reason)

	f = newFake()
	f.add("ms-a", machineapi.ActionPatch, "")
	f.optIn = machineapi.OptIn{Mode: machineapi.OptInPartial, Selector: "pool=a", Source: "status.managedBootImagesStatus"}
	res, err = runBump(t, f.env(t), bumpInput())
	require.NoError(t, err)
	assert.Equal(t, "Reconciled", res.Outcome)
	assert.Equal(t, "pool=a", res.OptIn.Selector)
}

// Manual skew is the cluster admin's (MachineConfiguration), read from the
// operator's record; nothing is written.
func TestBootImageBumpManualSkew(t *testing.T) {
	f := newFake()
	f.add("ms-a", machineapi.ActionPatch, "")
	f.snap.Record = machineapi.BootImageRecord{Mode: SkewManual, OCPVersion: "4.9.0"}
	res, err := runBump(t, f.env(t), bumpInput())
	require.NoError(t, err)
	assert.False(t, res.Skew.Upgradeable, "4.9.0 < 4.16.0 (numerically, not as strings)")
	assert.Contains(t, res.Skew.Message, "4.9.0")
}

func TestBootImageBumpCanaryFailureRollsBackEveryPatch(t *testing.T) {
	f := newFake()
	f.add("ms-a", machineapi.ActionPatch, "")
	f.add("ms-b", machineapi.ActionPatch, "")
	f.add("ms-c", machineapi.ActionUpToDate, "")
	f.canary = CanaryResult{Machine: "m-1", Phase: "Provisioned", Detail: "still Provisioned at the deadline"}
	in := bumpInput()
	in.Canary = &BootImageCanary{}
	res, err := runBump(t, f.env(t), in)
	requireCanaryFailed(t, err)
	assert.Equal(t, "CanaryFailed", res.Outcome)
	require.NotNil(t, res.Canary)
	assert.Equal(t, "ms-a", res.Canary.MachineSet)
	assert.False(t, res.Canary.Joined)
	assert.ElementsMatch(t, []string{"ms-a", "ms-b"}, f.restores)
	assert.Equal(t, ami("ami-old"), f.images["ms-a"])
	assert.Equal(t, ami("ami-old"), f.images["ms-b"])
	assert.Equal(t, [][2]int32{{1, 2}, {2, 1}}, f.scales, "scaled up, then back down")
	assert.Len(t, res.Restored, 3)
	// Each change is in the ledger, with its original, before it is made.
	assert.Equal(t, []string{"record image ms-a", "patch ms-a"}, filterOps(f.ops, "ms-a", 2))
	assert.Equal(t, []string{"record image ms-b", "patch ms-b"}, filterOps(f.ops, "ms-b", 2))
	assert.Contains(t, f.changes, BootImageChange{MachineSet: "ms-a", Change: ledger.BootImageChangeImage, Previous: ami("ami-old"), Applied: ami("ami-new")})
	assert.Contains(t, f.changes, BootImageChange{MachineSet: "ms-a", Change: ledger.BootImageChangeScale, PreviousReplicas: 1, ScaledReplicas: 2})
	i := indexOf(f.ops, "record scale ms-a")
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, "scale ms-a 1->2", f.ops[i+1], "the scale-up is recorded before it is made")
}

// filterOps is the first n ops on MachineSet name.
func filterOps(ops []string, name string, n int) []string {
	var out []string
	for _, op := range ops {
		if strings.HasSuffix(op, " "+name) || strings.Contains(op, " "+name+" ") {
			out = append(out, op)
		}
	}
	return out[:min(n, len(out))]
}

func indexOf(ops []string, op string) int {
	for i, o := range ops {
		if o == op {
			return i
		}
	}
	return -1
}

func TestBootImageBumpCanarySuccess(t *testing.T) {
	f := newFake()
	f.add("ms-a", machineapi.ActionPatch, "")
	in := bumpInput()
	in.Canary = &BootImageCanary{MachineSet: "ms-a"}
	res, err := runBump(t, f.env(t), in)
	require.NoError(t, err)
	assert.True(t, res.Canary.Joined)
	assert.Equal(t, [][2]int32{{1, 2}, {2, 1}}, f.scales)
	assert.Empty(t, f.restores)
	assert.Equal(t, "Reconciled", res.Outcome)
}

func TestBootImageBumpCancelRunsCompensations(t *testing.T) {
	f := newFake()
	f.add("ms-a", machineapi.ActionPatch, "")
	f.add("ms-b", machineapi.ActionPatch, "")
	env := f.env(t)
	in := bumpInput()
	in.SettleInterval = time.Hour // cancel while it settles after the patches
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	res, err := runBump(t, env, in)
	require.Error(t, err)
	assert.True(t, temporal.IsCanceledError(err), "%v", err)
	assert.Equal(t, "Cancelled", res.Outcome)
	assert.ElementsMatch(t, []string{"ms-a", "ms-b"}, f.restores)
	assert.Equal(t, ami("ami-old"), f.images["ms-a"])
}

func TestBootImageBumpInputValidation(t *testing.T) {
	ok := BootImageBumpInput{Cluster: "c1"}
	require.NoError(t, ok.Validate())
	assert.Equal(t, "cluster/c1", ok.Target())
	bad := []BootImageBumpInput{
		{},
		{Cluster: "a/b"},
		{Cluster: "c", Release: "4.19"},
		{Cluster: "c", Selection: "Some"},
		{Cluster: "c", Selection: SelectPartial},
		{Cluster: "c", Selector: "a=b"},
		{Cluster: "c", Skew: "Strict"},
		{Cluster: "c", Skew: SkewManual},
		{Cluster: "c", Skew: SkewManual, ManualOCPVersion: "4.16.0", ManualRHCOSVersion: "9.4"},
		{Cluster: "c", Skew: SkewManual, ManualOCPVersion: "4.16"},
		{Cluster: "c", Skew: SkewManual, ManualRHCOSVersion: "416.94"},
		{Cluster: "c", ManualOCPVersion: "4.16.0"},
		{Cluster: "c", Concurrency: -1},
		{Cluster: "c", SettleInterval: -time.Second},
		{Cluster: "c", Canary: &BootImageCanary{Timeout: -1}},
	}
	for i, in := range bad {
		assert.Error(t, in.Validate(), "case %d: %+v", i, in)
	}
	// The workflow refuses bad input without touching anything.
	f := newFake()
	_, err := runBump(t, f.env(t), BootImageBumpInput{Cluster: "c1", Skew: "Strict"})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, "InvalidInput", app.Type())
}

// rhcosAgainst92 checks an RHCOS boot image version alone against the
// MCO's RHCOS limit (9.2) on a RHEL 9 release.
func rhcosAgainst92(mode, rhcos string) SkewCheck {
	return SkewCheck{Mode: mode, BootRHCOSVersion: rhcos, LimitRHCOSVersion: "9.2", Release: "4.22.0", ReleaseOSVersion: "9.6.20260210-0"}
}

func TestEvaluateSkew(t *testing.T) {
	base := SkewCheck{LimitOCPVersion: "4.16.0", LimitRHCOSVersion: "9.4", Release: "4.19.2", ReleaseOSVersion: "9.6.20250523-0"}
	with := func(f func(c *SkewCheck)) SkewCheck { c := base; f(&c); return c }
	cases := []struct {
		name   string
		check  SkewCheck
		ok     bool
		reason string
	}{
		{"automatic within", with(func(c *SkewCheck) { c.Mode = SkewAutomatic; c.BootOCPVersion = "4.16.8" }), true, ReasonSkewOK},
		{"automatic at limit", with(func(c *SkewCheck) { c.Mode = SkewAutomatic; c.BootOCPVersion = "4.16.0" }), true, ReasonSkewOK},
		{"automatic beyond", with(func(c *SkewCheck) { c.Mode = SkewAutomatic; c.BootOCPVersion = "4.9.0" }), false, ReasonSkewError},
		{"OS build strings are not compared", with(func(c *SkewCheck) {
			c.Mode = SkewAutomatic
			c.BootOCPVersion = "4.16.8"
			c.BootRHCOSVersion = "9.4.20240715-0" // "9.4.2024..." < "9.6.2025..." as strings: irrelevant
		}), true, ReasonSkewOK},
		{"RHEL major mismatch", with(func(c *SkewCheck) {
			c.Mode = SkewAutomatic
			c.BootOCPVersion = "4.19.0"
			c.BootRHCOSVersion = "8.6.20220101-0"
		}), false, ReasonSkewRHELMismatch},
		{"manual rhcos within", with(func(c *SkewCheck) { c.Mode = SkewManual; c.BootRHCOSVersion = "9.4" }), true, ReasonSkewOK},
		{"manual rhcos beyond", with(func(c *SkewCheck) { c.Mode = SkewManual; c.BootRHCOSVersion = "9.2" }), false, ReasonSkewError},
		{"manual rhcos other major", with(func(c *SkewCheck) { c.Mode = SkewManual; c.BootRHCOSVersion = "10.0" }), false, ReasonSkewRHELMismatch},
		{"manual ocp beyond", with(func(c *SkewCheck) { c.Mode = SkewManual; c.BootOCPVersion = "4.15.99" }), false, ReasonSkewError},
		{"unknown version", with(func(c *SkewCheck) { c.Mode = SkewAutomatic }), false, ReasonSkewUnknown},
		{"no limit", SkewCheck{Mode: SkewAutomatic, Release: "4.19.2", BootOCPVersion: "4.1.0"}, true, ReasonSkewOK},
		{"none never blocks", with(func(c *SkewCheck) { c.Mode = SkewNone; c.BootOCPVersion = "4.1.0"; c.BootRHCOSVersion = "8.1" }), true, ReasonSkewDisabled},
		// machine-config-operator pkg/operator/status_test.go: RHCOS
		// versions against the operator's limit of RHEL 9.2
		// (pkg/controller/common/constants.go), legacy ones included.
		{"mco: automatic, modern below the limit", rhcosAgainst92(SkewAutomatic, "9.0.20251023-0"), false, ReasonSkewError},
		{"mco: automatic, legacy within the limit", rhcosAgainst92(SkewAutomatic, "416.94.202510081640-0"), true, ReasonSkewOK},
		{"mco: automatic, legacy below the limit", rhcosAgainst92(SkewAutomatic, "411.86.202308081056-0"), false, ReasonSkewRHELMismatch},
		{"mco: automatic, exact minimum", rhcosAgainst92(SkewAutomatic, "413.92.202402131523-0"), true, ReasonSkewOK},
		{"mco: manual, modern within the limit", rhcosAgainst92(SkewManual, "9.6.20251023-0"), true, ReasonSkewOK},
		{"mco: manual, modern below the limit", rhcosAgainst92(SkewManual, "9.1.20251023-0"), false, ReasonSkewError},
		{"mco: manual, legacy within the limit", rhcosAgainst92(SkewManual, "416.94.202510081640-0"), true, ReasonSkewOK},
		{"mco: manual, legacy below the limit", rhcosAgainst92(SkewManual, "411.86.202308081056-0"), false, ReasonSkewRHELMismatch},
	}
	for _, c := range cases {
		v := EvaluateSkew(c.check)
		assert.Equal(t, c.ok, v.Upgradeable, "%s: %+v", c.name, v)
		assert.Equal(t, c.reason, v.Reason, "%s: %+v", c.name, v)
		if !v.Upgradeable {
			assert.Contains(t, v.Message, "update the boot images", "%s: a hint is given", c.name)
		}
	}
}

// requireCanaryFailed: the bump ended with its canary failed.
func requireCanaryFailed(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, "BootImageBumpCanaryFailed", app.Type())
}
