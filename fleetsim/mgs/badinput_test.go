package mgs_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/mgs"
)

func TestBadRequestsGet4xxJSON(t *testing.T) {
	h := start(t)
	img := spImage("1.1.0")
	const id = "6f1a3b52-7c2e-4d5e-9a8b-0c1d2e3f4a5b"
	cases := []struct {
		name, method, path string
		body               io.Reader
		status             int
		code               string
	}{
		{"unknown SP", "GET", "/mgs/0/sp/sled/99/component/sp/update-status", nil, 400, "InvalidSp"},
		{"bad SP type", "GET", "/mgs/0/sp/toaster/1", nil, 400, ""},
		{"bad SP slot", "GET", "/mgs/0/sp/sled/-1", nil, 400, ""},
		{"unsupported component", "GET", "/mgs/0/sp/sled/2/component/rot/update-status", nil, 400, "RequestUnsupportedForComponent"},
		{"over-long component", "GET", "/mgs/0/sp/sled/2/component/abcdefghijklmnopq/update-status", nil, 400, ""},
		{"malformed UUID", "POST", "/mgs/0/sp/sled/2/component/sp/update?id=not-a-uuid&firmware_slot=0", bytes.NewReader(img), 400, ""},
		{"missing id", "POST", "/mgs/0/sp/sled/2/component/sp/update?firmware_slot=0", bytes.NewReader(img), 400, ""},
		{"SP slot 1", "POST", "/mgs/0/sp/sled/2/component/sp/update?id=" + id + "&firmware_slot=1", bytes.NewReader(img), 400, "InvalidSlotForComponent"},
		{"host slot 2", "POST", "/mgs/0/sp/sled/2/component/host-boot-flash/update?id=" + id + "&firmware_slot=2", bytes.NewReader(img), 400, "InvalidSlotForComponent"},
		{"firmware_slot not a number", "POST", "/mgs/0/sp/sled/2/component/sp/update?id=" + id + "&firmware_slot=x", bytes.NewReader(img), 400, ""},
		{"firmware_slot missing", "POST", "/mgs/0/sp/sled/2/component/sp/update?id=" + id, bytes.NewReader(img), 400, ""},
		{"empty image", "POST", "/mgs/0/sp/sled/2/component/sp/update?id=" + id + "&firmware_slot=0", bytes.NewReader(nil), 503, "UpdateFailed"},
		{"not an SP image", "POST", "/mgs/0/sp/sled/2/component/sp/update?id=" + id + "&firmware_slot=0", strings.NewReader("garbage"), 503, "UpdateFailed"},
		{"image for another component", "POST", "/mgs/0/sp/sled/2/component/sp/update?id=" + id + "&firmware_slot=0",
			bytes.NewReader(mgs.MakeImage(mgs.ImageHeader{Component: mgs.CompHost, Version: "1"}, 100)), 503, "UpdateFailed"},
		{"abort bad JSON", "POST", "/mgs/0/sp/sled/2/component/sp/update-abort", strings.NewReader("{"), 400, ""},
		{"abort unknown field", "POST", "/mgs/0/sp/sled/2/component/sp/update-abort", strings.NewReader(`{"id":"` + id + `","x":1}`), 400, ""},
		{"abort missing id", "POST", "/mgs/0/sp/sled/2/component/sp/update-abort", strings.NewReader(`{}`), 400, ""},
		{"abort bad id", "POST", "/mgs/0/sp/sled/2/component/sp/update-abort", strings.NewReader(`{"id":"nope"}`), 400, ""},
		{"active-slot persist missing", "POST", "/mgs/0/sp/sled/2/component/host-boot-flash/active-slot", strings.NewReader(`{"slot":1}`), 400, ""},
		{"active-slot bad slot", "POST", "/mgs/0/sp/sled/2/component/host-boot-flash/active-slot?persist=true", strings.NewReader(`{"slot":7}`), 400, "InvalidSlotForComponent"},
		{"caboose slot missing", "GET", "/mgs/0/sp/sled/2/component/sp/caboose", nil, 400, ""},
		{"power bad state", "POST", "/mgs/0/sp/sled/2/power-state", strings.NewReader(`"A9"`), 400, ""},
		{"host flash has no caboose", "GET", "/mgs/0/sp/sled/2/component/host-boot-flash/caboose?firmware_slot=0", nil, 400, "RequestUnsupportedForComponent"},
		{"startup options missing a field", "POST", "/mgs/0/sp/sled/2/startup-options", strings.NewReader(`{"phase2_recovery_mode":true}`), 400, ""},
		{"unknown MGS", "GET", "/mgs/7/sp/sled/2", nil, 404, ""},
		{"unknown route", "GET", "/mgs/0/nope", nil, 404, ""},
		{"wrong method", "DELETE", "/mgs/0/sp/sled/2/component/sp/update-status", nil, 405, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := h.raw(c.method, c.path, c.body)
			assert.Equal(t, c.status, status, "%v", body)
			code, _ := body["error_code"].(string)
			assert.Equal(t, c.code, code, "%v", body)
			assert.NotEmpty(t, body["message"])
		})
	}
	// Reset errors come in SpComponentResetError's shape.
	status, body := h.raw("POST", "/mgs/0/sp/sled/99/component/sp/reset", nil)
	assert.Equal(t, 400, status)
	assert.Equal(t, "other", body["state"])
	assert.Equal(t, "InvalidSp", body["error_code"])
	assert.Empty(t, h.truth(sledA).Deliveries, "no bad request started an update")
}

func TestOversizedImageRejected(t *testing.T) {
	h := start(t)
	const path = "/mgs/0/sp/sled/2/component/sp/update?id=6f1a3b52-7c2e-4d5e-9a8b-0c1d2e3f4a5b&firmware_slot=0"
	// Declared length over the limit: refused before reading.
	req, err := http.NewRequest("POST", h.srv.URL+path, io.LimitReader(zeroReader{}, 64<<20+1))
	require.NoError(t, err)
	req.ContentLength = 64<<20 + 1
	req.Header.Set("api-version", mgs.APIVersion)
	resp, err := http.DefaultClient.Do(req)
	if err == nil { // the server may close before the client finished sending
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		resp.Body.Close()
	}
	// Unknown length (chunked): cut off while streaming.
	status, body := h.raw("POST", path, io.MultiReader(strings.NewReader(mgs.ImageMagic+`{"component":"sp","version":"9"}`+"\n"), io.LimitReader(zeroReader{}, 64<<20+1)))
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "ImageTooLarge", body["error_code"])
	assert.Empty(t, h.truth(sledA).Deliveries)
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
