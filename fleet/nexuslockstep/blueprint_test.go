package nexuslockstep_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/nexuslockstep"
	"github.com/fleetsaga/fleetsaga/fleet/openapi"
)

// realBlueprint is testdata/blueprint-b848b6df85.json: a blueprint as
// omicron b848b6df85 serialises it (nexus/types/src/deployment.rs
// BlueprintSledConfig: disks, datasets and zones are iddqd IdOrdMaps,
// JSON arrays), built from the vendored lockstep document's schema; the
// test serves it through the contract check, so it is proven to match.
const (
	realSled     = "8a0e1f62-5a2c-4b43-9c2e-3f0c2d1a7b01"
	realNexus    = "8c3d4e5f-6071-4283-8c9d-1e2f3a4b5c6d"
	realCrucible = "7b2c3d4e-5f60-4172-9b8c-0d1e2f3a4b5c"
	realExpunged = "9d4e5f60-7182-4394-8dae-2f3a4b5c6d7f"
)

// The client decodes a blueprint of today's rack, and the child it makes
// to expunge a zone is one Nexus's import accepts (checked against the
// document) with only that zone and the sled's generation changed.
func TestRealBlueprintDecodesAndExpunges(t *testing.T) {
	raw, err := os.ReadFile("testdata/blueprint-b848b6df85.json")
	require.NoError(t, err)
	var imported []byte
	mux := http.NewServeMux()
	mux.HandleFunc("GET /nexus/r/deployment/blueprints/all/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(raw)
	})
	mux.HandleFunc("POST /nexus/r/deployment/blueprints/import", func(w http.ResponseWriter, r *http.Request) {
		imported, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	tr := &openapi.Transport{Contract: openapi.MustLoad(openapi.NexusLockstep), Prefix: "/nexus/r", Rep: t, Responses: true}
	c := nexuslockstep.New(srv.URL+"/nexus/r", &http.Client{Transport: tr, Timeout: 10 * time.Second})
	ctx := context.Background()

	bp, err := c.Blueprint(ctx, uuid.MustParse("5b7c0e3a-1d2f-4a6b-8c9d-0e1f2a3b4c5d"))
	require.NoError(t, err)
	sled, nexus := uuid.MustParse(realSled), uuid.MustParse(realNexus)
	require.Len(t, bp.Sleds[sled].Zones, 4)
	z, ok := bp.Zone(sled, nexus)
	require.True(t, ok)
	assert.Equal(t, nexuslockstep.ZoneNexus, z.ZoneType.Type)
	gen, ok := bp.NexusGenerationOf(nexus)
	require.True(t, ok)
	assert.Equal(t, uint64(1), gen)
	gone, _ := bp.Zone(sled, uuid.MustParse(realExpunged))
	assert.Equal(t, nexuslockstep.Disposition{Kind: nexuslockstep.Expunged, AsOfGeneration: 2, ReadyForCleanup: true}, gone.Disposition)

	child, err := bp.ChildExpunging(uuid.New(), sled, nexus, 4, "fleetsaga", "expunge", time.Now())
	require.NoError(t, err)
	require.NoError(t, c.Import(ctx, child))
	var sent struct {
		Sleds map[string]struct {
			Generation uint64            `json:"sled_agent_generation"`
			Zones      []json.RawMessage `json:"zones"`
			Datasets   []json.RawMessage `json:"datasets"`
		} `json:"sleds"`
	}
	require.NoError(t, json.Unmarshal(imported, &sent), "the import is a blueprint with array zones")
	assert.Equal(t, uint64(4), sent.Sleds[realSled].Generation)
	assert.Len(t, sent.Sleds[realSled].Zones, 4)
	assert.Len(t, sent.Sleds[realSled].Datasets, 2, "what fleetsaga does not know goes back unchanged")
	got, _ := child.Zone(sled, nexus)
	assert.Equal(t, nexuslockstep.Disposition{Kind: nexuslockstep.Expunged, AsOfGeneration: 4}, got.Disposition)
	crucible, _ := child.Zone(sled, uuid.MustParse(realCrucible))
	assert.Equal(t, nexuslockstep.InService, crucible.Disposition.Kind)
}

// A sled listing one zone ID twice is not a blueprint (iddqd refuses a
// duplicate key when it deserialises an IdOrdMap).
func TestBlueprintWithDuplicateZoneIsRefused(t *testing.T) {
	raw, err := os.ReadFile("testdata/blueprint-b848b6df85.json")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	s := m["sleds"].(map[string]any)[realSled].(map[string]any)
	zones := s["zones"].([]any)
	s["zones"] = append(zones, zones[0])
	raw, _ = json.Marshal(m)
	_, err = nexuslockstep.ParseBlueprint(raw)
	assert.ErrorContains(t, err, "zone 6a1b2c3d-4e5f-4061-8a7b-9c0d1e2f3a4b listed twice")
}

// A child that expunges a zone with external networking (a Nexus
// zone: external_ip + nic) changes the rack's external networking, so
// omicron bumps external_networking_generation (planning
// blueprint_builder/builder.rs, after `let mut blueprint = Blueprint`,
// is_external_networking_config_different) and blippy calls a child that
// does not bump it Fatal (reconfigurator/blippy/src/checks.rs
// check_external_networking_generation). Nexus's switch sync
// (background/tasks/sync_switch_configuration.rs) uses the generation to
// tell stale NAT entries from new ones.
func TestExpungingANexusZoneBumpsExternalNetworkingGeneration(t *testing.T) {
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
	internal, err := bp.ChildExpunging(uuid.New(), uuid.MustParse(realSled), uuid.MustParse(realCrucible), 4, "fleetsaga", "expunge", time.Now())
	require.NoError(t, err)
	assert.Equal(t, gen(bp), gen(internal), "a crucible zone has no external networking: the generation stays")
}
