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
