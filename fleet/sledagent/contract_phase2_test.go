package sledagent_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// The host OS update's sled-agent traffic follows the document, requests
// and responses: the artifact store's config, a PUT of the phase 2 file,
// the listing, a sled config naming it for disk B, and inventory's
// boot_partitions once sled-agent wrote it. The store's refusals (no
// config, a digest mismatch, an outdated generation) are the real ones.
func TestArtifactStoreAndHostPhase2FollowOpenAPI(t *testing.T) {
	ctx := context.Background()
	rack := spec.Rack{ID: "r", MGSSleds: []int{0, 1}}
	for i := 0; i < 2; i++ {
		rack.Sleds = append(rack.Sleds, spec.Sled{ID: uuid.New(), Cubby: i, Serial: fmt.Sprint("S", i), SP: spec.SPFirmware{Active: "1"},
			Host: spec.HostFlash{Slots: [2]string{"1.0.0", "0.9.0"}}, Generation: 3, Zones: []spec.Zone{{ID: uuid.New(), Kind: "internal_ntp"}}})
	}
	s := &spec.Spec{Seed: 1, SpeedUp: 100, Timings: spec.DefaultTimings(), Racks: []spec.Rack{rack}}
	require.NoError(t, s.Validate())
	d, err := sled.NewDomain(ctx, fleetsim.Env{Spec: s, Faults: faults.NewRegistry(1), Log: zerolog.Nop()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	id := rack.Sleds[0].ID
	c := checkedClient(t, "http://"+d.SledAgentAddress(id))

	inv, err := c.InventoryOf(ctx, id)
	require.NoError(t, err)
	bp := inv.LastReconciliation.BootPartitions
	require.NotNil(t, bp)
	a, err := bp.SlotA.Value()
	require.NoError(t, err)
	assert.Equal(t, sled.InitialPhase2("1.0.0"), a, "disk A holds the phase 2 of slot 0's OS")

	p2 := simmgs.MakePhase2Image("2.0.0", 64<<10)
	hash := simmgs.SHA256Hex(p2)
	_, found, err := c.ArtifactConfig(ctx)
	require.NoError(t, err)
	assert.False(t, found, "no artifact config yet: 404")
	_, err = c.PutArtifact(ctx, hash, 1, bytes.NewReader(p2), int64(len(p2)))
	require.Error(t, err, "no config: 400")
	require.NoError(t, c.PutArtifactConfig(ctx, sledagent.ArtifactConfig{Generation: 1, Artifacts: []string{hash}}))
	assert.True(t, sledagent.IsConflict(c.PutArtifactConfig(ctx, sledagent.ArtifactConfig{Generation: 1})), "same generation, other contents: 409")
	_, err = c.PutArtifact(ctx, hash, 2, bytes.NewReader(p2), int64(len(p2)))
	assert.True(t, sledagent.IsConflict(err), "another generation: 409")
	_, err = c.PutArtifact(ctx, hash, 1, bytes.NewReader(p2[1:]), int64(len(p2)-1))
	assert.ErrorContains(t, err, "Digest mismatch")
	_, err = c.PutArtifact(ctx, hash, 1, bytes.NewReader(p2), int64(len(p2)))
	require.NoError(t, err)
	list, err := c.ListArtifacts(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 2, list.List[hash])

	cfg, err := inv.LedgeredSledConfig.WithHostPhase2(4, sledagent.M2SlotB, hash)
	require.NoError(t, err)
	require.NoError(t, c.PutOmicronConfig(ctx, cfg))
	require.Eventually(t, func() bool {
		inv, err := c.InventoryOf(ctx, id)
		require.NoError(t, err)
		b, err := inv.LastReconciliation.BootPartitions.SlotB.Value()
		return err == nil && b.ArtifactHash == hash
	}, 10*time.Second, 10*time.Millisecond)
	assert.True(t, sledagent.IsBadRequest(c.PutArtifactConfig(ctx, sledagent.ArtifactConfig{Generation: 2})), "the sled config uses it: 400")

	other, err := inv.LedgeredSledConfig.WithHostPhase2(5, sledagent.M2SlotA, simmgs.SHA256Hex([]byte("absent")))
	require.NoError(t, err)
	err = c.PutOmicronConfig(ctx, other)
	assert.True(t, sledagent.IsBadRequest(err), "an artifact the store lacks: 400")
	assert.ErrorContains(t, err, "not found")
}
