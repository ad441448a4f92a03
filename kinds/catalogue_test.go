package kinds

import (
	"testing"

	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/kinds/bootimage"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/workflows"
	"github.com/stretchr/testify/assert"
)

// The catalogue says which workflow types honour pause/resume: the starter
// refuses to pause the others (the signal would be silently ignored).
func TestPausableTypesComeFromTheCatalogue(t *testing.T) {
	for typ, want := range map[string]bool{
		"Rollout": true, "AgentInstall": true,
		"SPFirmwareUpdate": false, "AgentInstallServer": false, "AgentDriftCheck": false, "ZoneExpunge": false,
	} {
		assert.Equal(t, want, PausableType(typ), typ)
	}
}

// Every kind a plan can name is in the catalogue, with an input of its own.
func TestEveryKindIsInTheCatalogue(t *testing.T) {
	for k, in := range map[workflows.Kind]workflows.UpdateInput{
		workflows.KindSPFirmware: &mgsupdate.SPFirmwareInput{}, workflows.KindHostFlash: &mgsupdate.HostFlashInput{}, workflows.KindHostRecovery: &mgsupdate.HostRecoveryInput{}, workflows.KindZoneExpunge: &zoneexpunge.ZoneExpungeInput{},
		workflows.KindBootImageBump: &bootimage.BootImageBumpInput{}, workflows.KindAgentInstall: &agents.AgentInstallInput{}, workflows.KindAgentDrift: &agents.AgentDriftInput{},
	} {
		info, ok := Kinds[k]
		if assert.True(t, ok, k) {
			assert.IsType(t, in, info.NewInput(), k)
		}
	}
}

// A workflow ID alone tells the starter whether to refuse pause/resume:
// the parent of a pausable kind and a rollout listen, the kinds the
// catalogue does not mark pausable and a pausable kind's children do not.
func TestPausableIDsComeFromTheCatalogue(t *testing.T) {
	for id, want := range map[string][2]bool{
		"fleetsaga/rollout/plan/q3":               {true, true},
		"fleetsaga/agent-install/dc/vm-agent":     {true, true},
		"fleetsaga/agent-install/dc/vm-agent/r/s": {false, true},
		"fleetsaga/rollout/plan/q3/x":             {false, true},
		"fleetsaga/rollout/cluster/q3":            {false, true},
		"fleetsaga/agent-drift/dc/drift/all":      {false, true},
		"fleetsaga/sp-firmware/sp/sled/3":         {false, true},
		"fleetsaga/zone-expunge/zone/z":           {false, true},
		"fleetsaga/no-such-kind/x/y":              {false, false},
		"temporal-sys-worker":                     {false, false},
	} {
		pausable, known := PausableID(id)
		assert.Equal(t, want, [2]bool{pausable, known}, id)
	}
}
