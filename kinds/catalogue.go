package kinds

import (
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/kinds/bootimage"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/workflows"
	"go.temporal.io/sdk/workflow"
)

// How a workflow moves between worker builds (Worker Deployment
// Versioning; docs/CONTRIBUTING.md "Changing a running workflow"):
//   - pinned: a device update finishes on the build that started it, so a
//     new build never replays an attempt half-way through a device; its
//     code changes without markers;
//   - autoUpgrade: a long-running parent moves to the current build at its
//     next workflow task; its command changes need workflow.GetVersion.
const (
	pinned      = workflow.VersioningBehaviorPinned
	autoUpgrade = workflow.VersioningBehaviorAutoUpgrade
)

// KindInfo is everything fleetsaga needs to know about one update kind.
// Kinds is the one place a kind declares itself: worker registration, the
// starter and plans, dry runs and their estimates, pause, the replay test,
// chaos and the benchmark read it.
type KindInfo struct {
	// Workflow is the workflow function (its name is the workflow type).
	Workflow any
	// NewInput returns a zero input to decode a plan entry into.
	NewInput func() workflows.UpdateInput
	// Behavior is how its runs move between builds (pinned, autoUpgrade).
	Behavior workflow.VersioningBehavior
	// Children are the workflows it starts that are not kinds of their
	// own (registered and replayed with it, with the same behaviour).
	Children []any
	// Plan is its dry run: the kind's prechecks, read-only (nil: none).
	Plan func(workflow.Context, workflows.UpdateInput) workflows.UpdatePlan
	// DeviceTime is how long one device's change takes, for a dry run's
	// estimate.
	DeviceTime time.Duration
	// Pausable: its parent honours pause/resume (workflows.ListenPauseResume;
	// its children, whose IDs extend the parent's, do not).
	Pausable bool
	// Agents: it needs a CNAPI endpoint (registered only with one).
	Agents bool
}

// Kinds lists the update kinds a plan can use.
//
// Device times are measured at real device speed where a measurement
// exists (bench/results/speedup1: 26 s per SP, 45 s per server's agent
// install); the others are the order of the device's own work: a host
// boots and fetches its phase 2 image (minutes), a zone expunge is a config
// PUT and an inventory proof, a MachineSet patch settles before it is
// rechecked.
var Kinds = map[workflows.Kind]KindInfo{
	workflows.KindSPFirmware: {Workflow: mgsupdate.SPFirmwareUpdate, NewInput: func() workflows.UpdateInput { return &mgsupdate.SPFirmwareInput{} },
		Behavior: pinned, Plan: planOf(mgsupdate.PlanSPFirmware), DeviceTime: 26 * time.Second},
	workflows.KindHostFlash: {Workflow: mgsupdate.HostBootFlashUpdate, NewInput: func() workflows.UpdateInput { return &mgsupdate.HostFlashInput{} },
		Behavior: pinned, Plan: planOf(mgsupdate.PlanHostFlash), DeviceTime: 10 * time.Minute},
	workflows.KindHostRecovery: {Workflow: mgsupdate.HostRecovery, NewInput: func() workflows.UpdateInput { return &mgsupdate.HostRecoveryInput{} },
		Behavior: pinned, Plan: planOf(mgsupdate.PlanHostRecovery), DeviceTime: 10 * time.Minute},
	workflows.KindZoneExpunge: {Workflow: zoneexpunge.ZoneExpunge, NewInput: func() workflows.UpdateInput { return &zoneexpunge.ZoneExpungeInput{} },
		Behavior: pinned, Plan: planOf(zoneexpunge.PlanZoneExpunge), DeviceTime: time.Minute},
	workflows.KindBootImageBump: {Workflow: bootimage.BootImageBump, NewInput: func() workflows.UpdateInput { return &bootimage.BootImageBumpInput{} },
		Behavior: pinned, Plan: planOf(bootimage.PlanBootImage), DeviceTime: 30 * time.Second},
	workflows.KindAgentInstall: {Workflow: agents.AgentInstall, NewInput: func() workflows.UpdateInput { return &agents.AgentInstallInput{} },
		Behavior: autoUpgrade, Children: []any{agents.AgentInstallServer}, Plan: planOf(agents.PlanAgentInstall),
		DeviceTime: 45 * time.Second, Pausable: true, Agents: true},
	workflows.KindAgentDrift: {Workflow: agents.AgentDriftCheck, NewInput: func() workflows.UpdateInput { return &agents.AgentDriftInput{} },
		Behavior: autoUpgrade, Plan: planOf(agents.PlanAgentDrift), DeviceTime: 45 * time.Second, Agents: true},
}

// Registration is one workflow a worker runs, with its behaviour.
type Registration struct {
	Workflow any
	Behavior workflow.VersioningBehavior
	Agents   bool // only with a CNAPI endpoint
}

// Registrations are the workflows of the kinds and their children (the
// rollout and its dry run add theirs: rollout.Registrations).
func Registrations() []Registration {
	var out []Registration
	// Kinds is a map: registrations list the kinds in name order.
	for _, k := range slices.Sorted(maps.Keys(Kinds)) {
		info := Kinds[k]
		out = append(out, Registration{Workflow: info.Workflow, Behavior: info.Behavior, Agents: info.Agents})
		for _, c := range info.Children {
			out = append(out, Registration{Workflow: c, Behavior: pinned, Agents: info.Agents})
		}
	}
	return out
}

// planOf adapts a kind's typed dry run to the catalogue's.
func planOf[I any, P interface {
	*I
	workflows.UpdateInput
}](plan func(workflow.Context, I) workflows.UpdatePlan) func(workflow.Context, workflows.UpdateInput) workflows.UpdatePlan {
	return func(ctx workflow.Context, in workflows.UpdateInput) workflows.UpdatePlan {
		return plan(ctx, *any(in).(P))
	}
}

// workflowName is the workflow type Temporal registers a function under:
// its name without the package path.
func workflowName(f any) string {
	full := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
	return strings.TrimSuffix(full[strings.LastIndex(full, ".")+1:], "-fm")
}
