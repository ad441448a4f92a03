package mgs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

func spTarget(slot int) string { return fmt.Sprintf("sp/sled/%d", slot) }

func faultUpdateFailed(slot, pct int) faults.Fault {
	return faults.Fault{Kind: faults.UpdateFailed, Target: spTarget(slot), AfterPercent: pct, Times: 1}
}

func TestFaultSPResetMidDelivery(t *testing.T) {
	h := start(t)
	h.arm(faults.Fault{Kind: faults.SPResetMidDelivery, Target: spTarget(sledA), AfterPercent: 50, Times: 1})
	id, err := h.start(0, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	require.NoError(t, err)
	// The SP resets mid-delivery: once it is back it reports none.
	require.Eventually(t, func() bool { return h.truth(sledA).Resets == 1 }, 10*time.Second, 5*time.Millisecond)
	h.waitBack(sledA)
	assert.Equal(t, fmgs.UpdateNone, h.status(sledA, mgs.CompSP).State)
	_, err = h.caboose(sledA, mgs.CompSP, 1)
	requireCabooseInvalid(t, err)
	assert.Equal(t, "1.0.0", h.version(sledA, mgs.CompSP, 0))
	d := h.truth(sledA).Deliveries[0]
	assert.Equal(t, id, d.UpdateID)
	assert.Equal(t, "lost", d.Outcome)
	assert.GreaterOrEqual(t, d.Bytes*100/d.Total, int64(50))
	assert.Less(t, d.Bytes, d.Total)

	// The fault fired once; a new attempt with a new ID completes.
	id2, err := h.start(1, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	require.NoError(t, err)
	assert.Equal(t, id2, h.waitStatus(sledA, mgs.CompSP, fmgs.UpdateComplete).ID)
}

func TestFaultSPStuck(t *testing.T) {
	h := start(t)
	h.arm(faults.Fault{Kind: faults.SPStuck, Target: spTarget(sledA), AfterPercent: 30, Times: 1})
	id, err := h.start(0, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	require.NoError(t, err)
	var stuck fmgs.UpdateStatus
	require.Eventually(t, func() bool {
		stuck = h.status(sledA, mgs.CompSP)
		return stuck.State == fmgs.UpdateInProgress && stuck.BytesReceived > 0
	}, 5*time.Second, 5*time.Millisecond)
	time.Sleep(400 * time.Millisecond) // > whole-image delivery time
	later := h.status(sledA, mgs.CompSP)
	assert.Equal(t, fmgs.UpdateInProgress, later.State)
	assert.Less(t, later.BytesReceived, later.TotalBytes)
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, later.BytesReceived, h.status(sledA, mgs.CompSP).BytesReceived, "no progress")
	// Abort ends it.
	require.NoError(t, h.mgs[1].UpdateAbort(context.Background(), sled(sledA), mgs.CompSP, id))
	assert.Equal(t, fmgs.UpdateAborted, h.status(sledA, mgs.CompSP).State)
}

func TestFaultUpdateFailedHostFlash(t *testing.T) {
	h := start(t)
	h.arm(faultUpdateFailed(sledA, 0))
	id, err := h.start(0, sledA, mgs.CompHost, 1, mgs.MakeImage(mgs.ImageHeader{Component: mgs.CompHost, Version: "2"}, imageSize))
	require.NoError(t, err)
	st := h.waitStatus(sledA, mgs.CompHost, fmgs.UpdateFailed)
	assert.Equal(t, id, st.ID)
	// Host flash accepts a new update after failed (no abort needed).
	_, err = h.start(0, sledA, mgs.CompHost, 1, mgs.MakeImage(mgs.ImageHeader{Component: mgs.CompHost, Version: "2"}, imageSize))
	require.NoError(t, err)
}

func TestFaultMGSDown(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	h.arm(faults.Fault{Kind: faults.MGSDown, Target: "mgs/0"})
	_, err := h.mgs[0].SpState(ctx, sled(sledA))
	requireCode(t, err, 503, "ServiceUnavailable")
	assert.Equal(t, fmgs.ClassTryNextMGS, fmgs.Classify(err))
	// The failover helper goes to the other instance and then prefers it.
	st, c, err := fmgs.TryAllFrom(ctx, h.set, func(ctx context.Context, c *fmgs.Client) (fmgs.SpState, error) {
		return c.SpState(ctx, sled(sledA))
	})
	require.NoError(t, err)
	assert.NotEmpty(t, st.SerialNumber)
	assert.Equal(t, h.mgs[1].BaseURL(), c.BaseURL())
	assert.Equal(t, h.mgs[1].BaseURL(), h.set.Clients()[0].BaseURL())
	// Both down: the error still says "try another MGS (later)".
	h.arm(faults.Fault{Kind: faults.MGSDown, Target: "mgs/1"})
	err = h.set.Do(ctx, func(ctx context.Context, c *fmgs.Client) error {
		_, err := c.SpState(ctx, sled(sledA))
		return err
	})
	require.Error(t, err)
	assert.Equal(t, fmgs.ClassTryNextMGS, fmgs.Classify(err))
	assert.Contains(t, err.Error(), "all 2 MGS instances failed")
}

// An MGS that goes down takes its delivery task with it: the SP still says
// in_progress but makes no progress, and the update can be aborted through
// the other MGS.
func TestFaultMGSDownKillsItsDelivery(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	id, err := h.start(0, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st := h.status(sledA, mgs.CompSP)
		return st.State == fmgs.UpdateInProgress && st.BytesReceived > 0
	}, 5*time.Second, 5*time.Millisecond)
	fid := h.arm(faults.Fault{Kind: faults.MGSDown, Target: "mgs/0"})
	time.Sleep(500 * time.Millisecond)
	st, err := h.mgs[1].UpdateStatus(ctx, sled(sledA), mgs.CompSP)
	require.NoError(t, err)
	assert.Equal(t, fmgs.UpdateInProgress, st.State)
	assert.Less(t, st.BytesReceived, st.TotalBytes)
	h.reg.Clear(fid)
	time.Sleep(100 * time.Millisecond)
	again, err := h.mgs[1].UpdateStatus(ctx, sled(sledA), mgs.CompSP)
	require.NoError(t, err)
	assert.Equal(t, st.BytesReceived, again.BytesReceived, "the task died; MGS coming back does not resume it")
	require.NoError(t, h.mgs[1].UpdateAbort(ctx, sled(sledA), mgs.CompSP, id))
	assert.Contains(t, h.truth(sledA).Deliveries[0].Note, "mgs/0 went down")
}

func TestFaultForeignUpdateNobodyResets(t *testing.T) {
	h := start(t)
	h.arm(faults.Fault{Kind: faults.ForeignUpdate, Target: spTarget(sledA), Version: "1.1.0", Times: 1})
	ours, err := h.start(0, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	requireCode(t, err, 503, fmgs.CodeUpdateInProgress)
	st := h.status(sledA, mgs.CompSP)
	assert.NotEqual(t, ours, st.ID)
	foreign := st.ID
	done := h.waitStatus(sledA, mgs.CompSP, fmgs.UpdateComplete)
	assert.Equal(t, foreign, done.ID)
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, fmgs.UpdateComplete, h.status(sledA, mgs.CompSP).State, "nobody resets it")
	tr := h.truth(sledA)
	require.Len(t, tr.Deliveries, 1)
	assert.True(t, tr.Deliveries[0].Foreign)
	assert.Equal(t, 1, tr.Deliveries[0].MGS, "delivered by the other MGS")
	// Taking over: reset, and the foreign image becomes active.
	require.NoError(t, h.mgs[1].Reset(context.Background(), sled(sledA), mgs.CompSP))
	assert.Equal(t, "1.1.0", h.version(sledA, mgs.CompSP, 0))
}

func TestFaultForeignUpdateForeignActorResets(t *testing.T) {
	h := start(t)
	h.arm(faults.Fault{Kind: faults.ForeignUpdate, Target: spTarget(sledA), Version: "1.2.0", Latency: "100ms", Times: 1})
	_, err := h.start(1, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	requireCode(t, err, 503, fmgs.CodeUpdateInProgress)
	require.Eventually(t, func() bool { return h.truth(sledA).Resets == 1 }, 10*time.Second, 10*time.Millisecond)
	h.waitBack(sledA)
	assert.Equal(t, "1.2.0", h.version(sledA, mgs.CompSP, 0))
	assert.Equal(t, 0, h.truth(sledA).Deliveries[0].MGS)
}

func TestFaultResetReplyLost(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	_, err := h.start(0, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	require.NoError(t, err)
	h.waitStatus(sledA, mgs.CompSP, fmgs.UpdateComplete)
	h.arm(faults.Fault{Kind: faults.ResetReplyLost, Target: spTarget(sledA), Times: 1})
	err = h.mgs[1].Reset(ctx, sled(sledA), mgs.CompSP)
	require.Error(t, err)
	var e *fmgs.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 0, e.Status, "no HTTP reply at all: %v", err)
	assert.Equal(t, fmgs.ClassTryNextMGS, fmgs.Classify(err))
	// The reset happened.
	assert.Equal(t, 1, h.truth(sledA).Resets)
	assert.Equal(t, "1.1.0", h.version(sledA, mgs.CompSP, 0))
}

func TestWatchdogRollsBackWhenMGSDiesDuringReset(t *testing.T) {
	h := start(t, func(s *spec.Spec) { s.Timings.SPResetTime = spec.Duration{Duration: 30 * time.Second} })
	ctx := context.Background()
	_, err := h.start(0, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	require.NoError(t, err)
	h.waitStatus(sledA, mgs.CompSP, fmgs.UpdateComplete)
	errc := make(chan error, 1)
	go func() { errc <- h.mgs[0].Reset(ctx, sled(sledA), mgs.CompSP) }()
	require.Eventually(t, func() bool { return h.truth(sledA).Resets == 1 }, 2*time.Second, 2*time.Millisecond)
	h.arm(faults.Fault{Kind: faults.MGSDown, Target: "mgs/0"})
	require.Error(t, <-errc)
	h.waitBack(sledA)
	assert.Equal(t, "1.0.0", h.version(sledA, mgs.CompSP, 0), "watchdog not disarmed: previous image")
	assert.Equal(t, 2, h.truth(sledA).Resets)
}

func TestFaultMiddlewareErrorRateAndLatency(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	id := h.arm(faults.Fault{Kind: faults.ErrorRate, Target: "api/mgs/1", Rate: 1})
	_, err := h.mgs[1].SpState(ctx, sled(sledA))
	requireCode(t, err, 503, "ServiceUnavailable")
	_, err = h.mgs[0].SpState(ctx, sled(sledA))
	require.NoError(t, err)
	h.reg.Clear(id)
	h.arm(faults.Fault{Kind: faults.Latency, Target: "api/mgs/0", Latency: "150ms", Times: 1})
	t0 := time.Now()
	_, err = h.mgs[0].SpState(ctx, sled(sledA))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(t0), 150*time.Millisecond)
}

// The foreign actor's host post-update is Nexus's (omicron
// nexus/mgs-updates/src/host_phase1_updater.rs): the written slot made
// active, then one SP reset, which restarts the host. A foreign update of
// the same version writes the same phase 1 (its hash is ours).
func TestFaultForeignHostUpdateActivatesAndResetsOnce(t *testing.T) {
	h := start(t)
	h.arm(faults.Fault{Kind: faults.ForeignUpdate, Target: spTarget(sledA), Latency: "100ms", Times: 1})
	img := mgs.MakeImage(mgs.ImageHeader{Component: mgs.CompHost, Version: "2.0.0"}, 64<<10)
	_, err := h.start(0, sledA, mgs.CompHost, 1, img)
	requireCode(t, err, 503, fmgs.CodeUpdateInProgress)
	require.Eventually(t, func() bool { return h.truth(sledA).Resets == 1 }, 10*time.Second, 10*time.Millisecond)
	tr := h.truth(sledA)
	assert.Equal(t, 1, tr.Host.PersistentSlot, "the written slot is active")
	assert.Equal(t, mgs.SHA256Hex(img), tr.Host.Slots[1].SHA256, "the same phase 1 as ours")
	assert.Empty(t, tr.Updates[mgs.CompHost]["id"], "the reset cleared the update status")
}
