package mgs_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/mgs"
)

// fleetsim's phase 2 images are in the real format, and its MGS checks an
// upload as MGS does (InMemoryHostPhase2Provider::insert): bytes that are
// not a phase 2 image get 400 BadHostPhase2Image with MGS's message; a
// good image is named by its header's SHA-256 and is the one image that
// MGS keeps.
func TestPhase2UploadChecksTheImageAndKeepsOne(t *testing.T) {
	h := start(t)
	img := mgs.MakePhase2Image("2.0.0", phase2Size)
	require.Len(t, img, phase2Size)
	hdr, err := fmgs.ParsePhase2Header(img)
	require.NoError(t, err)
	assert.EqualValues(t, phase2Size-fmgs.Phase2HeaderSize, hdr.DataSize)
	assert.Equal(t, mgs.SHA256Hex(img[fmgs.Phase2HeaderSize:]), hdr.SHA256, "the header carries the data's SHA-256")
	assert.Equal(t, "fleetsim host phase 2 2.0.0", hdr.ImageName)

	mut := func(f func(b []byte)) []byte { b := append([]byte(nil), img...); f(b); return b }
	bad := map[string]struct {
		body []byte
		msg  string
	}{
		"5,000 random bytes": {mgs.MakeImage(mgs.ImageHeader{Component: "x", Version: "1"}, 5000), "incorrect magic in image header (expected 0x1deb0075, got 0x45454c46)"},
		"too short":          {img[:100], "could not deserialize image header"},
		"version 1":          {mut(func(b []byte) { binary.LittleEndian.PutUint32(b[4:], 1) }), "incorrect version in image header (expected 0x2, got 0x1)"},
		"truncated":          {img[:len(img)-10], "incorrect image size (expected 131072, got 131062)"},
		"trailing bytes":     {append(append([]byte(nil), img...), 0), "incorrect image size (expected 131072, got 131073)"},
	}
	for name, c := range bad {
		status, body := h.raw(http.MethodPost, "/mgs/0/recovery/host-phase2", bytes.NewReader(c.body))
		assert.Equal(t, http.StatusBadRequest, status, name)
		assert.Equal(t, fmgs.CodeBadHostPhase2Image, body["error_code"], name)
		assert.Equal(t, c.msg, body["message"], name)
	}
	assert.Empty(t, h.mgsTruth(0).Phase2Images, "no refused upload was kept")

	id, err := h.mgs[0].UploadHostPhase2(t.Context(), bytes.NewReader(img), int64(len(img)))
	require.NoError(t, err)
	assert.Equal(t, hdr.SHA256, id, "named by the header's SHA-256")
	assert.NotEqual(t, mgs.SHA256Hex(img), id, "not the file's")

	other := mgs.MakePhase2Image("3.0.0", phase2Size)
	_, err = h.mgs[0].UploadHostPhase2(t.Context(), bytes.NewReader(other), int64(len(other)))
	require.NoError(t, err)
	imgs := h.mgsTruth(0).Phase2Images
	require.Len(t, imgs, 1, "MGS holds one recovery image (host_phase2_recovery_image_cache_max_images = 1)")
	assert.Equal(t, mgs.Phase2ID(other), imgs[0].SHA256)
	assert.Equal(t, mgs.SHA256Hex(other), imgs[0].ArtifactSHA256)
}

// A body over MGS's 512 MiB limit gets dropshot's 400 (no error_code).
func TestPhase2UploadSizeLimit(t *testing.T) {
	h := start(t)
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/mgs/1/recovery/host-phase2", io.LimitReader(zeroReader{}, 512<<20+1))
	require.NoError(t, err)
	req.ContentLength = 512<<20 + 1
	req.Header.Set("api-version", mgs.APIVersion)
	resp, err := http.DefaultClient.Do(req)
	if err == nil { // the server may close before the client sent it all
		var body map[string]any
		require.NoError(t, decodeJSON(resp, &body))
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Equal(t, "request body exceeded maximum size of 536870912 bytes", body["message"])
		assert.NotContains(t, body, "error_code")
	}
	assert.Empty(t, h.mgsTruth(1).Phase2Images)
}

// An SP image for another board is refused before anything is written
// (MGS compares the archive's BORD with the SP's: 503 UpdateFailed,
// "board mismatch"), through either MGS; the SP's slots are unchanged.
func TestSPImageForAnotherBoardIsRefused(t *testing.T) {
	h := start(t)
	before := h.truth(sledA)
	img := mgs.MakeImage(mgs.ImageHeader{Component: mgs.CompSP, Version: "1.1.0", Board: "sidecar-b"}, imageSize)
	for via := range 2 {
		_, err := h.start(via, sledA, mgs.CompSP, 0, img)
		require.Error(t, err)
		var e *fmgs.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, http.StatusServiceUnavailable, e.Status)
		assert.Equal(t, fmgs.CodeUpdateFailed, e.Code)
		assert.Contains(t, e.Message, "board mismatch: SP is gimlet-e but archive is for sidecar-b")
	}
	after := h.truth(sledA)
	assert.Empty(t, after.Deliveries, "nothing was delivered")
	assert.Equal(t, before.SP, after.SP, "both banks unchanged")
	assert.Equal(t, fmgs.UpdateNone, h.status(sledA, mgs.CompSP).State)

	// The SP's own board is accepted.
	_, err := h.start(0, sledA, mgs.CompSP, 0, mgs.MakeImage(mgs.ImageHeader{Component: mgs.CompSP, Version: "1.1.0", Board: "gimlet-e"}, imageSize))
	require.NoError(t, err)
}

// mgsTruth is MGS instance i's truth (/mgs/{i}).
func (h *harness) mgsTruth(i int) mgs.MGSTruth {
	h.t.Helper()
	var tr mgs.Truth
	h.getJSON("/truth/mgs", &tr)
	for _, r := range tr.Racks {
		for _, m := range r.MGS {
			if m.Index == i {
				return m
			}
		}
	}
	h.t.Fatalf("no MGS %d in the truth", i)
	return mgs.MGSTruth{}
}
