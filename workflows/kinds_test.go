package workflows

import (
	"testing"

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
