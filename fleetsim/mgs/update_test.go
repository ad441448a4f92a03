package mgs_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

func TestSPUpdateHappyPath(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	st, err := h.mgs[0].SpState(ctx, sled(sledA))
	require.NoError(t, err)
	assert.Equal(t, spec.GeneratedPart, st.Model)
	assert.Equal(t, h.spec.Racks[0].Sleds[sledA].Serial, st.SerialNumber)
	assert.Equal(t, "1.0.0", h.version(sledA, mgs.CompSP, 0))
	assert.Equal(t, "0.9.0", h.version(sledA, mgs.CompSP, 1))

	id, err := h.start(0, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	require.NoError(t, err)
	first := h.status(sledA, mgs.CompSP)
	assert.Contains(t, []fmgs.UpdateState{fmgs.UpdatePreparing, fmgs.UpdateInProgress}, first.State)
	assert.Equal(t, id, first.ID)

	// Progress is visible through either MGS while the image streams in.
	var sawProgress bool
	require.Eventually(t, func() bool {
		s, err := h.mgs[1].UpdateStatus(ctx, sled(sledA), mgs.CompSP)
		require.NoError(t, err)
		if s.State == fmgs.UpdateInProgress && s.BytesReceived > 0 && s.BytesReceived < s.TotalBytes {
			assert.EqualValues(t, imageSize, s.TotalBytes)
			sawProgress = true
		}
		return s.State == fmgs.UpdateComplete
	}, 10*time.Second, 5*time.Millisecond)
	assert.True(t, sawProgress, "never saw in_progress with partial bytes")
	done := h.status(sledA, mgs.CompSP)
	assert.Equal(t, id, done.ID)
	assert.Equal(t, "1.1.0", h.version(sledA, mgs.CompSP, 1), "inactive bank holds the new image")
	assert.Equal(t, "1.0.0", h.version(sledA, mgs.CompSP, 0), "not active before reset")

	// Reset (sled A is not an MGS host, so either instance may do it).
	require.NoError(t, h.mgs[0].Reset(ctx, sled(sledA), mgs.CompSP))
	assert.Equal(t, "1.1.0", h.version(sledA, mgs.CompSP, 0))
	assert.Equal(t, "1.0.0", h.version(sledA, mgs.CompSP, 1))
	assert.Equal(t, fmgs.UpdateNone, h.status(sledA, mgs.CompSP).State, "reset clears the update state")

	tr := h.truth(sledA)
	assert.Equal(t, 1, tr.Resets)
	require.Len(t, tr.Deliveries, 1)
	d := tr.Deliveries[0]
	assert.Equal(t, id, d.UpdateID)
	assert.Equal(t, mgs.CompSP, d.Component)
	assert.Equal(t, 0, d.MGS, "delivered by the MGS that accepted it")
	assert.Equal(t, "complete", d.Outcome)
	assert.EqualValues(t, imageSize, d.Bytes)
	assert.Equal(t, mgs.SHA256Hex(spImage("1.1.0")), d.SHA256)
	assert.False(t, d.Foreign)
}

func TestUpdateStatusRawShapes(t *testing.T) {
	h := start(t)
	code, body := h.raw("GET", "/mgs/0/sp/sled/2/component/sp/update-status", nil)
	require.Equal(t, 200, code)
	assert.Equal(t, map[string]any{"state": "none"}, body)

	id, err := h.start(1, sledA, mgs.CompHost, 1, mgs.MakeImage(mgs.ImageHeader{Component: mgs.CompHost, Version: "2.0.0"}, imageSize))
	require.NoError(t, err)
	code, body = h.raw("GET", "/mgs/0/sp/sled/2/component/host-boot-flash/update-status", nil)
	require.Equal(t, 200, code)
	assert.Equal(t, "preparing", body["state"])
	assert.Equal(t, id.String(), body["id"])
	prog, ok := body["progress"].(map[string]any)
	require.True(t, ok, "host flash preparing has progress{current,total}: %v", body)
	assert.Contains(t, prog, "current")
	assert.Contains(t, prog, "total")

	h.waitStatus(sledA, mgs.CompHost, fmgs.UpdateInProgress)
	code, body = h.raw("GET", "/mgs/1/sp/sled/2/component/host-boot-flash/update-status", nil)
	require.Equal(t, 200, code)
	if body["state"] == "in_progress" {
		assert.ElementsMatch(t, []string{"state", "id", "bytes_received", "total_bytes"}, keys(body))
	}
	h.waitStatus(sledA, mgs.CompHost, fmgs.UpdateComplete)
	_, body = h.raw("GET", "/mgs/1/sp/sled/2/component/host-boot-flash/update-status", nil)
	assert.Equal(t, map[string]any{"state": "complete", "id": id.String()}, body)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestPrepareRefusedWhileBusy(t *testing.T) {
	h := start(t)
	id, err := h.start(0, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	require.NoError(t, err)

	_, err = h.start(1, sledA, mgs.CompSP, 0, spImage("1.2.0"))
	requireCode(t, err, 503, fmgs.CodeUpdateInProgress)
	assert.Equal(t, fmgs.ClassBusy, fmgs.Classify(err))

	// Another component: today's MGS has no code for this SP refusal.
	_, err = h.start(1, sledA, mgs.CompHost, 1, mgs.MakeImage(mgs.ImageHeader{Component: mgs.CompHost, Version: "2.0.0"}, imageSize))
	requireCode(t, err, 503, fmgs.CodeSpCommunicationFailed)
	assert.True(t, fmgs.Ambiguous(err))

	// The refused requests did not disturb ours.
	st := h.waitStatus(sledA, mgs.CompSP, fmgs.UpdateComplete)
	assert.Equal(t, id, st.ID)
	assert.Len(t, h.truth(sledA).Deliveries, 1)
}

func TestSPRefusesNewUpdateUntilResetAfterComplete(t *testing.T) {
	h := start(t)
	_, err := h.start(0, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	require.NoError(t, err)
	h.waitStatus(sledA, mgs.CompSP, fmgs.UpdateComplete)

	_, err = h.start(0, sledA, mgs.CompSP, 0, spImage("1.2.0"))
	requireCode(t, err, 503, fmgs.CodeUpdateInProgress)

	// The status is kept until the reset.
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, fmgs.UpdateComplete, h.status(sledA, mgs.CompSP).State)

	require.NoError(t, h.mgs[1].Reset(context.Background(), sled(sledA), mgs.CompSP))
	_, err = h.start(0, sledA, mgs.CompSP, 0, spImage("1.2.0"))
	require.NoError(t, err)
}

func TestHostFlashAllowsNewUpdateAfterTerminalStates(t *testing.T) {
	h := start(t)
	img := mgs.MakeImage(mgs.ImageHeader{Component: mgs.CompHost, Version: "2.0.0"}, 16<<10)
	_, err := h.start(0, sledA, mgs.CompHost, 1, img)
	require.NoError(t, err)
	h.waitStatus(sledA, mgs.CompHost, fmgs.UpdateComplete)
	id2, err := h.start(0, sledA, mgs.CompHost, 1, img)
	require.NoError(t, err, "host flash accepts a new update after complete")
	require.NoError(t, h.mgs[0].UpdateAbort(context.Background(), sled(sledA), mgs.CompHost, id2))
	_, err = h.start(0, sledA, mgs.CompHost, 1, img)
	require.NoError(t, err, "host flash accepts a new update after aborted")
}

func TestUpdateFailedNeedsAbortForSP(t *testing.T) {
	h := start(t)
	h.arm(faultUpdateFailed(sledA, 40))
	id, err := h.start(0, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	require.NoError(t, err)
	st := h.waitStatus(sledA, mgs.CompSP, fmgs.UpdateFailed)
	assert.Equal(t, id, st.ID)
	assert.NotZero(t, st.Code)

	_, err = h.start(0, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	requireCode(t, err, 503, fmgs.CodeUpdateInProgress)

	require.NoError(t, h.mgs[1].UpdateAbort(context.Background(), sled(sledA), mgs.CompSP, id))
	assert.Equal(t, fmgs.UpdateAborted, h.status(sledA, mgs.CompSP).State)
	id2, err := h.start(0, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	require.NoError(t, err)
	assert.Equal(t, id2, h.waitStatus(sledA, mgs.CompSP, fmgs.UpdateComplete).ID)
	tr := h.truth(sledA)
	require.Len(t, tr.Deliveries, 2)
	assert.Equal(t, "failed", tr.Deliveries[0].Outcome)
	assert.Equal(t, "complete", tr.Deliveries[1].Outcome)
}

func TestAbortRules(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	c := h.mgs[0]

	// No update at all → success that changes nothing (UpdateAbortBody).
	require.NoError(t, c.UpdateAbort(ctx, sled(sledA), mgs.CompSP, uuid.New()))
	assert.Equal(t, fmgs.UpdateNone, h.status(sledA, mgs.CompSP).State)

	id, err := h.start(0, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	require.NoError(t, err)
	// Another ID → error, and the update goes on.
	err = c.UpdateAbort(ctx, sled(sledA), mgs.CompSP, uuid.New())
	requireCode(t, err, 503, fmgs.CodeSpCommunicationFailed)
	// Our ID → aborted{id}; the SP keeps that status.
	require.NoError(t, c.UpdateAbort(ctx, sled(sledA), mgs.CompSP, id))
	st := h.status(sledA, mgs.CompSP)
	assert.Equal(t, fmgs.UpdateAborted, st.State)
	assert.Equal(t, id, st.ID)
	// Already aborted → OK.
	require.NoError(t, h.mgs[1].UpdateAbort(ctx, sled(sledA), mgs.CompSP, id))
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, fmgs.UpdateAborted, h.status(sledA, mgs.CompSP).State, "status kept until the next update")
	_, err = h.caboose(sledA, mgs.CompSP, 1)
	requireCabooseInvalid(t, err)

	// Complete → too late.
	id2, err := h.start(1, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	require.NoError(t, err)
	h.waitStatus(sledA, mgs.CompSP, fmgs.UpdateComplete)
	err = c.UpdateAbort(ctx, sled(sledA), mgs.CompSP, id2)
	requireCode(t, err, 503, fmgs.CodeSpCommunicationFailed)
	assert.Equal(t, fmgs.UpdateComplete, h.status(sledA, mgs.CompSP).State, "the SP's state tells: too late")

	tr := h.truth(sledA)
	require.Len(t, tr.Deliveries, 2)
	assert.Equal(t, "aborted", tr.Deliveries[0].Outcome)
	assert.Less(t, tr.Deliveries[0].Bytes, int64(imageSize))
	assert.Equal(t, "complete", tr.Deliveries[1].Outcome)
	assert.Equal(t, 1, tr.Deliveries[1].MGS)
}

func TestResetClearsStateAndLeavesInactiveInvalid(t *testing.T) {
	h := start(t)
	_, err := h.start(0, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	require.NoError(t, err)
	h.waitStatus(sledA, mgs.CompSP, fmgs.UpdateInProgress)
	require.NoError(t, h.mgs[1].Reset(context.Background(), sled(sledA), mgs.CompSP))
	assert.Equal(t, fmgs.UpdateNone, h.status(sledA, mgs.CompSP).State)
	assert.Equal(t, "1.0.0", h.version(sledA, mgs.CompSP, 0), "an incomplete update never becomes active")
	_, err = h.caboose(sledA, mgs.CompSP, 1)
	requireCabooseInvalid(t, err)
	tr := h.truth(sledA)
	assert.Equal(t, "lost", tr.Deliveries[0].Outcome)
	assert.Equal(t, 1, tr.Resets)
	// A new update is accepted after the reset.
	_, err = h.start(0, sledA, mgs.CompSP, 0, spImage("1.1.0"))
	require.NoError(t, err)
}

func TestSPDoesNotAnswerWhileRebooting(t *testing.T) {
	h := start(t, func(s *spec.Spec) { s.Timings.SPResetTime = spec.Duration{Duration: 60 * time.Second} })
	ctx := context.Background()
	errc := make(chan error, 1)
	go func() { errc <- h.mgs[1].Reset(ctx, sled(sledA), mgs.CompSP) }()
	require.Eventually(t, func() bool {
		_, err := h.mgs[0].UpdateStatus(ctx, sled(sledA), mgs.CompSP)
		return err != nil
	}, 2*time.Second, 5*time.Millisecond)
	_, err := h.mgs[0].UpdateStatus(ctx, sled(sledA), mgs.CompSP)
	if err != nil {
		requireCode(t, err, 503, fmgs.CodeSpCommunicationFailed)
		assert.Equal(t, fmgs.ClassTryNextMGS, fmgs.Classify(err))
	}
	require.NoError(t, <-errc, "MGS answers the reset once the SP is back")
	_, err = h.mgs[0].UpdateStatus(ctx, sled(sledA), mgs.CompSP)
	require.NoError(t, err)
}

func TestResetSpOfLocalSled(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	err := h.mgs[0].Reset(ctx, sled(sledMGS0), mgs.CompSP)
	require.Error(t, err)
	var e *fmgs.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 400, e.Status)
	assert.Equal(t, "reset_sp_of_local_sled", e.ResetState)
	assert.True(t, fmgs.HasCode(err, fmgs.CodeResetSpOfLocalSled))
	assert.Equal(t, fmgs.ClassTryNextMGS, fmgs.Classify(err))
	assert.Equal(t, 0, h.truth(sledMGS0).Resets)

	// Raw body follows SpComponentResetError.
	code, body := h.raw("POST", "/mgs/1/sp/sled/1/component/sp/reset", nil)
	assert.Equal(t, 400, code)
	assert.Equal(t, "reset_sp_of_local_sled", body["state"])

	// The failover helper resets through the other MGS.
	require.NoError(t, h.set.Do(ctx, func(ctx context.Context, c *fmgs.Client) error {
		return c.Reset(ctx, sled(sledMGS0), mgs.CompSP)
	}))
	assert.Equal(t, 1, h.truth(sledMGS0).Resets)
}

func TestCabooseAndActiveSlot(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	c, err := h.mgs[0].Caboose(ctx, sled(sledB), mgs.CompSP, 0)
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", c.Version)
	assert.Equal(t, "gimlet-e", c.Board)
	_, err = h.mgs[0].Caboose(ctx, sled(sledB), mgs.CompHost, 1)
	requireCode(t, err, 400, "RequestUnsupportedForComponent") // host boot flash: no caboose, only hashes
	slot, err := h.mgs[1].ActiveSlot(ctx, sled(sledB), mgs.CompHost)
	require.NoError(t, err)
	assert.EqualValues(t, 0, slot)
	require.NoError(t, h.mgs[1].SetActiveSlot(ctx, sled(sledB), mgs.CompHost, 1, false))
	slot, _ = h.mgs[0].ActiveSlot(ctx, sled(sledB), mgs.CompHost)
	assert.EqualValues(t, 1, slot, "a transient choice is what the next boot uses")
	assert.Equal(t, 0, h.truth(sledB).Host.PersistentSlot)
	require.NoError(t, h.mgs[1].SetActiveSlot(ctx, sled(sledB), mgs.CompHost, 1, true))
	assert.Equal(t, 1, h.truth(sledB).Host.PersistentSlot)
	_, err = h.mgs[0].Caboose(ctx, sled(sledB), mgs.CompSP, 2)
	requireCode(t, err, 400, "InvalidSlotForComponent")
}

func TestHostFlashSlotHash(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	img := mgs.MakeImage(mgs.ImageHeader{Component: mgs.CompHost, Version: "2.0.0"}, 32<<10)
	_, err := h.start(0, sledA, mgs.CompHost, 1, img)
	require.NoError(t, err)
	h.waitStatus(sledA, mgs.CompHost, fmgs.UpdateComplete)
	hs, err := h.mgs[0].HashGet(ctx, sled(sledA), mgs.CompHost, 1)
	require.NoError(t, err)
	assert.Equal(t, fmgs.HashNotCalculated, hs.Status)
	require.NoError(t, h.mgs[0].HashStart(ctx, sled(sledA), mgs.CompHost, 1))
	require.Eventually(t, func() bool {
		hs, err = h.mgs[1].HashGet(ctx, sled(sledA), mgs.CompHost, 1)
		return err == nil && hs.Status == fmgs.HashHashed
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, mgs.SHA256Hex(img), hs.SHA256, "slot hash is the written image's SHA-256")
	_, err = h.mgs[0].HashGet(ctx, sled(sledA), mgs.CompSP, 1)
	requireCode(t, err, 400, "RequestUnsupportedForComponent")
}

func TestAllSpIDs(t *testing.T) {
	h := start(t)
	ids, err := h.mgs[0].AllSpIDs(context.Background())
	require.NoError(t, err)
	require.Len(t, ids, 4)
	assert.Equal(t, sled(3), ids[3])
}

// Rack r is served by /mgs/{2r} and /mgs/{2r+1}; each pair sees only its
// rack's SPs.
func TestSecondRackHasItsOwnMGSPair(t *testing.T) {
	h := start(t, func(s *spec.Spec) {
		r2 := spec.GenerateRacks(2, 99)[0]
		r2.ID = "rack-2"
		for i := range r2.Sleds {
			r2.Sleds[i].Serial = "BRM9900000" + string(rune('0'+i))
		}
		for i := range r2.Sleds {
			for j := range r2.Sleds[i].Zones {
				r2.Sleds[i].Zones[j].ID = uuid.New()
			}
			r2.Sleds[i].ID = uuid.New()
		}
		s.Racks = append(s.Racks, r2)
	})
	ctx := context.Background()
	c2 := fmgs.New(h.srv.URL+"/mgs/2", nil)
	ids, err := c2.AllSpIDs(ctx)
	require.NoError(t, err)
	assert.Len(t, ids, 2)
	st, err := fmgs.New(h.srv.URL+"/mgs/3", nil).SpState(ctx, sled(1))
	require.NoError(t, err)
	assert.Equal(t, "BRM99000001", st.SerialNumber)
	_, err = c2.SpState(ctx, sled(3))
	requireCode(t, err, 400, fmgs.CodeInvalidSp)
	code, _ := h.raw("GET", "/mgs/4/sp/sled/0", nil)
	assert.Equal(t, 404, code)
}
