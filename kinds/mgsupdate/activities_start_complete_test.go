package mgsupdate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
)

// A host flash update that is already complete when we
// start (a previous fleetsaga run delivered it, then failed before its
// reset, e.g. zone safety) is not "update still in progress". omicron's
// apply_update (nexus/mgs-updates/src/driver_update.rs) watches another
// update only when the start fails with "update still in progress"; MGS
// takes a new host flash update over a complete one, so omicron starts its
// own at once, and so does MGSStartUpdate (it once reported it busy, and
// the driver watched it for the 600 s takeover timeout).
func TestStartHostFlashOverACompleteOneAsOmicron(t *testing.T) {
	m := newMGSAct(t)
	p1sum, _, prev := m.flashHostPhase1(t)
	p1 := mgsupdate.ArtifactRef{Version: "2", SHA256: p1sum, Path: filepath.Join(m.dir, "p1.bin")}
	_, err := os.Stat(p1.Path)
	require.NoError(t, err)
	require.Equal(t, "complete", m.truth().Updates[simmgs.CompHost]["state"], "the previous run's update is complete, not activated")
	sr := m.startWith(mgsupdate.StartUpdateInput{SP: sled2, Component: mgs.ComponentHostBootFlash, FirmwareSlot: 1,
		UpdateID: uuid.New(), Artifact: p1})
	assert.False(t, sr.Busy, "omicron starts its own update over complete update %s", prev)
	assert.True(t, sr.Started)
}
