package mgsupdate_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
)

// Review: the phase 2 step decides the owner only after it has written the
// sled's artifact config (storeArtifact before namePhase2). With the owner
// unknown (here: neither a lockstep endpoint nor direct mode; on a rack,
// also a target disabled or an endpoint gone between the precheck and this
// step) the step must stop having written nothing; instead it PUTs
// /artifacts-config at generation+1, which a real Nexus's TUF artifact
// replication then meets as 409 CONFIG_GENERATION
// (nexus/src/app/background/tasks/tuf_artifact_replication.rs).
func TestReviewPhase2StepDecidesTheOwnerBeforeWriting(t *testing.T) {
	m := newMGSAct(t)
	e := fleet.FromFleetsim(m.sim.URL, "") // not direct mode, no lockstep endpoint
	a := mgsupdate.NewMGSActivities(e, &http.Client{Timeout: 10 * time.Second, Transport: mgsChecked{t, m.reqs}}, nil, "test")
	m.env.RegisterActivity(a)
	sl := m.spec.Racks[0].Sleds[2]
	active := uint16(sl.Host.ActiveSlot)
	p2 := simmgs.MakePhase2Image("2.0.0", 64<<10)
	path := filepath.Join(m.dir, "phase2.bin")
	require.NoError(t, os.WriteFile(path, p2, 0o644))
	in := mgsupdate.HostPhase2Input{Serial: sl.Serial, SledID: sl.ID, ActiveSlot: active, Slot: 1 - active,
		Phase2:   mgsupdate.ArtifactRef{Version: "2.0.0", SHA256: simmgs.SHA256Hex(p2), Path: path},
		Deadline: time.Now().Add(30 * time.Second), PollInterval: 10 * time.Millisecond}
	before := m.sledTruth(2).Host.Artifacts

	_, err := m.env.ExecuteActivity(a.HostPhase2ToDisk, in)
	assert.Equal(t, failure.OwnerUnknown, mgsErrType(err), "%v", err)
	assert.Zero(t, m.reqs.count("PUT /sled-agent/"+sl.ID.String()+"/artifacts-config"), "no artifact config written while the owner is unknown")
	assert.Equal(t, before, m.sledTruth(2).Host.Artifacts, "nothing put into the artifact store")
}
