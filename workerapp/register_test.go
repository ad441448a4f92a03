package workerapp_test

import (
	"reflect"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/kinds"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/kinds/bootimage"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/workerapp"
)

func funcName(f any) string { return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name() }

// Every update kind a plan can use is registered, with an explicit
// versioning behaviour: a versioned worker refuses a workflow without one,
// and an unversioned one would run a kind the table forgot.
func TestEveryKindIsRegisteredWithAVersioningBehavior(t *testing.T) {
	behavior := map[string]workflow.VersioningBehavior{}
	for _, e := range workerapp.Registrations() {
		name := funcName(e.Workflow)
		require.NotContains(t, behavior, name, "registered twice")
		require.NotEqual(t, workflow.VersioningBehaviorUnspecified, e.Behavior, name)
		behavior[name] = e.Behavior
	}
	for kind, k := range kinds.Kinds {
		require.Contains(t, behavior, funcName(k.Workflow), "kind %s is not registered", kind)
	}
	// Device updates finish on the build that started them; long-running
	// parents move to the current build.
	pinned, auto := workflow.VersioningBehaviorPinned, workflow.VersioningBehaviorAutoUpgrade
	for _, c := range []struct {
		f    any
		want workflow.VersioningBehavior
	}{
		{mgsupdate.SPFirmwareUpdate, pinned}, {mgsupdate.HostBootFlashUpdate, pinned}, {zoneexpunge.ZoneExpunge, pinned},
		{bootimage.BootImageBump, pinned}, {agents.AgentInstallServer, pinned},
		{rollout.Rollout, auto}, {agents.AgentInstall, auto}, {agents.AgentDriftCheck, auto},
	} {
		require.Equal(t, c.want, behavior[funcName(c.f)], funcName(c.f))
	}
}
