package nexuslockstep_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/nexuslockstep"
)

// Review: a child that expunges a zone with external networking (a Nexus
// zone: external_ip + nic) changes the rack's external networking, so
// omicron bumps external_networking_generation (planning
// blueprint_builder/builder.rs, after `let mut blueprint = Blueprint`,
// is_external_networking_config_different) and blippy calls a child that
// does not bump it Fatal (reconfigurator/blippy/src/checks.rs
// check_external_networking_generation). Nexus's switch sync
// (background/tasks/sync_switch_configuration.rs) uses the generation to
// tell stale NAT entries from new ones.
func TestReviewExpungingANexusZoneBumpsExternalNetworkingGeneration(t *testing.T) {
	raw, err := os.ReadFile("testdata/blueprint-b848b6df85.json")
	require.NoError(t, err)
	bp, err := nexuslockstep.ParseBlueprint(raw)
	require.NoError(t, err)
	child, err := bp.ChildExpunging(uuid.New(), uuid.MustParse(realSled), uuid.MustParse(realNexus), 4, "fleetsaga", "expunge", time.Now())
	require.NoError(t, err)
	gen := func(b *nexuslockstep.Blueprint) uint64 {
		out, err := b.MarshalJSON()
		require.NoError(t, err)
		var v struct {
			Gen uint64 `json:"external_networking_generation"`
		}
		require.NoError(t, json.Unmarshal(out, &v))
		return v.Gen
	}
	assert.Equal(t, gen(bp)+1, gen(child), "the expunged Nexus zone's external IP and NIC leave the rack's external networking")
}
