package mgs_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	fsled "github.com/fleetsaga/fleetsaga/fleetsim/sled"
)

// sledAgent is the client of the sled-agent on the sled in cubby slot.
func (h *harness) sledAgent(slot int) *sledagent.Client {
	h.t.Helper()
	for _, s := range h.spec.Racks[0].Sleds {
		if s.Cubby == slot {
			return sledagent.New(fmt.Sprintf("%s/sled-agent/%s", h.srv.URL, s.ID), &http.Client{Timeout: 5 * time.Second})
		}
	}
	h.t.Fatalf("no sled in cubby %d", slot)
	return nil
}

func (h *harness) sledTruth(slot int) fsled.SledTruth {
	h.t.Helper()
	var out fsled.Truth
	h.getJSON("/truth/sled", &out)
	for _, s := range h.spec.Racks[0].Sleds {
		if s.Cubby != slot {
			continue
		}
		for _, st := range out.Sleds {
			if st.ID == s.ID {
				return st
			}
		}
	}
	h.t.Fatalf("no sled truth for cubby %d", slot)
	return fsled.SledTruth{}
}

// Without phase2_recovery_mode the host boots the phase 2 on the disk that
// matches the active slot, and only the one its phase 1 names: a new phase
// 1 whose phase 2 is not on disk B does not boot, and sled-agent does not
// answer. Back on slot 0 (disk A holds its pair) the host boots again.
func TestHostWithoutItsPhase2OnDiskFailsToBoot(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	h.writePhase1(sledA, 0, 1)
	h.recoveryMode(sledA, false)
	h.powerCycle(sledA)
	require.Eventually(t, func() bool { return h.truth(sledA).Host.State == mgs.HostPhase2Missing }, 10*time.Second, 5*time.Millisecond)
	tr := h.truth(sledA)
	assert.Equal(t, 1, tr.Host.BootedSlot)
	assert.Contains(t, tr.Host.BootFailure, "boot disk B holds phase 2")
	_, err := h.sledAgent(sledA).Inventory(ctx)
	require.Error(t, err, "a host that did not boot has no sled-agent")
	assert.False(t, h.sledTruth(sledA).Host.Up)

	require.NoError(t, h.mgs[0].SetActiveSlot(ctx, sled(sledA), mgs.CompHost, 0, true))
	h.powerCycle(sledA)
	require.Eventually(t, func() bool { return h.truth(sledA).Host.State == mgs.HostRunning }, 10*time.Second, 5*time.Millisecond)
	inv, err := h.sledAgent(sledA).Inventory(ctx)
	require.NoError(t, err)
	disk, err := inv.LastReconciliation.BootPartitions.BootDisk.Value()
	require.NoError(t, err)
	assert.Equal(t, sledagent.M2SlotA, disk)
	assert.Equal(t, mgs.Phase2FromDisk, h.truth(sledA).Host.Phase2Source)
}

// The rack's path: the phase 2 goes into sled-agent's artifact store (its
// config listing it first), the sled config names it for disk B, sled-agent
// writes it and inventory's boot_partitions reports it by both hashes;
// then the new phase 1 on slot 1 boots from disk B.
func TestHostBootsPhase2WrittenBySledAgent(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	sa := h.sledAgent(sledA)
	p2 := mgs.MakePhase2Image("2.0.0", phase2Size)
	file := mgs.SHA256Hex(p2)

	_, err := sa.PutArtifact(ctx, file, 1, bytes.NewReader(p2), int64(len(p2)))
	require.Error(t, err, "no artifact config yet")
	require.NoError(t, sa.PutArtifactConfig(ctx, sledagent.ArtifactConfig{Generation: 1, Artifacts: []string{file}}))
	_, err = sa.PutArtifact(ctx, file, 1, bytes.NewReader(append([]byte{}, p2[:len(p2)-1]...)), int64(len(p2)-1))
	require.Error(t, err, "digest mismatch")
	res, err := sa.PutArtifact(ctx, file, 1, bytes.NewReader(p2), int64(len(p2)))
	require.NoError(t, err)
	assert.EqualValues(t, 2, res.SuccessfulWrites)

	inv, err := sa.Inventory(ctx)
	require.NoError(t, err)
	cfg, err := inv.LedgeredSledConfig.WithHostPhase2(inv.LedgeredGeneration()+1, sledagent.M2SlotB, file)
	require.NoError(t, err)
	require.NoError(t, sa.PutOmicronConfig(ctx, cfg))
	require.Eventually(t, func() bool {
		inv, err := sa.Inventory(ctx)
		if err != nil {
			return false
		}
		d, err := inv.LastReconciliation.BootPartitions.SlotB.Value()
		return err == nil && d.ArtifactHash == file
	}, 10*time.Second, 10*time.Millisecond)
	inv, err = sa.Inventory(ctx)
	require.NoError(t, err)
	d, _ := inv.LastReconciliation.BootPartitions.SlotB.Value()
	assert.Equal(t, mgs.Phase2ID(p2), fsled.Phase2HeaderID(d), "the header's hash is MGS's name for it")

	img := mgs.MakeImage(mgs.ImageHeader{Component: mgs.CompHost, Version: "2.0.0", Phase2: mgs.Phase2ID(p2)}, 64<<10)
	_, err = h.start(0, sledA, mgs.CompHost, 1, img)
	require.NoError(t, err)
	h.waitStatus(sledA, mgs.CompHost, fmgs.UpdateComplete)
	require.NoError(t, h.mgs[1].SetActiveSlot(ctx, sled(sledA), mgs.CompHost, 1, true))
	require.NoError(t, h.mgs[0].Reset(ctx, sled(sledA), fmgs.ComponentSP))
	require.Eventually(t, func() bool {
		inv, err := sa.Inventory(ctx)
		if err != nil {
			return false
		}
		disk, err := inv.LastReconciliation.BootPartitions.BootDisk.Value()
		return err == nil && disk == sledagent.M2SlotB
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, mgs.Phase2ID(p2), h.truth(sledA).Host.BootedPhase2)
}
