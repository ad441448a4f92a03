package mgs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleet/openapi"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// Test timings at SpeedUp 100: SP prepare 20 ms, host prepare 100 ms, a
// 256 KiB image takes ~0.25 s to deliver, SP reset 200 ms, host boot 100 ms,
// a 128 KiB phase 2 image ~0.25 s to fetch.
const (
	testSpeedUp = 100
	imageSize   = 256 << 10
	phase2Size  = 128 << 10
)

// Sleds 0 and 1 host the MGS instances (mgs/0 on cubby 0, mgs/1 on cubby 1).
const (
	sledMGS0 = 0
	sledMGS1 = 1
	sledA    = 2
	sledB    = 3
)

type harness struct {
	t    *testing.T
	srv  *server
	reg  *faults.Registry
	mgs  [2]*fmgs.Client
	set  *fmgs.Set
	spec *spec.Spec
}

func testSpec(t *testing.T) *spec.Spec {
	t.Helper()
	s := &spec.Spec{Seed: 11, SpeedUp: testSpeedUp, Timings: spec.DefaultTimings()}
	s.Timings.FlashBytesPerSecond = 10 << 10 // ×100 = 1000 KiB/s
	s.Timings.Phase2BytesPerSecond = 5 << 10 // ×100 = 500 KiB/s
	s.Timings.SPResetTime = spec.Duration{Duration: 20 * time.Second}
	s.Timings.HostBootTime = spec.Duration{Duration: 10 * time.Second}
	s.Racks = spec.GenerateRacks(4, 11)
	require.Equal(t, []int{0, 1}, s.Racks[0].MGSSleds)
	require.NoError(t, s.Validate())
	return s
}

func start(t *testing.T, mutate ...func(*spec.Spec)) *harness {
	t.Helper()
	s := testSpec(t)
	for _, m := range mutate {
		m(s)
	}
	reg := faults.NewRegistry(s.Seed)
	sim, err := fleetsim.New(context.Background(), fleetsim.Env{
		Spec: s, Faults: reg, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	ts := httptest.NewServer(contractChecked(t, sim.Handler(), 2*len(s.Racks)))
	t.Cleanup(ts.Close)
	srv := &server{URL: ts.URL}
	hc := &http.Client{Timeout: 20 * time.Second}
	h := &harness{t: t, srv: srv, reg: reg, spec: s}
	h.mgs[0] = fmgs.New(srv.URL+"/mgs/0", hc)
	h.mgs[1] = fmgs.New(srv.URL+"/mgs/1", hc)
	h.set, err = fmgs.NewSet([]string{srv.URL + "/mgs/0", srv.URL + "/mgs/1"}, hc)
	require.NoError(t, err)
	return h
}

// server is where a test's fleetsim listens.
type server struct{ URL string }

var mgsContract = openapi.MustLoad(openapi.MGS)

// contractChecked checks every response of every MGS instance against
// MGS's OpenAPI document (a violation fails the test). Requests that are
// no MGS operation at all (the bad routes some tests send on purpose) and
// fleetsim's own endpoints (/truth, /faults) are not checked.
func contractChecked(t *testing.T, next http.Handler, instances int) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", next)
	for i := range instances {
		prefix := fmt.Sprintf("/mgs/%d", i)
		notMGS := func(r *http.Request) bool { return mgsContract.Operation(r, prefix) == "" }
		mux.Handle(prefix+"/", openapi.Middleware(mgsContract, prefix, t, notMGS, next))
	}
	return mux
}

func sled(slot int) fmgs.SpIdentifier {
	return fmgs.SpIdentifier{Type: fmgs.SpTypeSled, Slot: uint16(slot)}
}

func spImage(version string) []byte {
	return mgs.MakeImage(mgs.ImageHeader{Component: mgs.CompSP, Version: version}, imageSize)
}

func (h *harness) arm(f faults.Fault) int {
	h.t.Helper()
	id, err := h.reg.Arm(f)
	require.NoError(h.t, err)
	return id
}

func (h *harness) start(via int, slot int, comp string, fw uint16, img []byte) (uuid.UUID, error) {
	id := uuid.New()
	err := h.mgs[via].UpdateStart(context.Background(), sled(slot), comp, id, fw, bytes.NewReader(img), int64(len(img)))
	return id, err
}

func (h *harness) status(slot int, comp string) fmgs.UpdateStatus {
	h.t.Helper()
	st, err := fmgs.TryAll(context.Background(), h.set, func(ctx context.Context, c *fmgs.Client) (fmgs.UpdateStatus, error) {
		return c.UpdateStatus(ctx, sled(slot), comp)
	})
	require.NoError(h.t, err)
	return st
}

// waitStatus polls until the status is in state (SP reboots are waited out).
func (h *harness) waitStatus(slot int, comp string, state fmgs.UpdateState) fmgs.UpdateStatus {
	h.t.Helper()
	var last fmgs.UpdateStatus
	require.Eventually(h.t, func() bool {
		st, err := h.mgs[1].UpdateStatus(context.Background(), sled(slot), comp)
		if err != nil {
			return false
		}
		last = st
		return st.State == state
	}, 10*time.Second, 10*time.Millisecond, "waiting for %s, last %v", state, &last)
	return last
}

func (h *harness) truth(slot int) mgs.SPTruth {
	h.t.Helper()
	var out mgs.SPTruth
	h.getJSON(fmt.Sprintf("/truth/mgs/sp/sled/%d", slot), &out)
	return out
}

func (h *harness) getJSON(path string, out any) {
	h.t.Helper()
	resp, err := http.Get(h.srv.URL + path)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	require.Equal(h.t, http.StatusOK, resp.StatusCode)
	require.NoError(h.t, json.NewDecoder(resp.Body).Decode(out))
}

// waitBack waits until the SP answers again after a reset.
func (h *harness) waitBack(slot int) {
	h.t.Helper()
	require.Eventually(h.t, func() bool {
		_, err := h.mgs[1].SpState(context.Background(), sled(slot))
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
}

func (h *harness) caboose(slot int, comp string, fw uint16) (fmgs.Caboose, error) {
	return fmgs.TryAll(context.Background(), h.set, func(ctx context.Context, c *fmgs.Client) (fmgs.Caboose, error) {
		return c.Caboose(ctx, sled(slot), comp, fw)
	})
}

func (h *harness) version(slot int, comp string, fw uint16) string {
	h.t.Helper()
	c, err := h.caboose(slot, comp, fw)
	require.NoError(h.t, err)
	return c.Version
}

// raw sends a raw request and returns the status and decoded JSON body.
func (h *harness) raw(method, path string, body io.Reader) (int, map[string]any) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.srv.URL+path, body)
	require.NoError(h.t, err)
	req.Header.Set("api-version", mgs.APIVersion)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	var m map[string]any
	if len(bytes.TrimSpace(b)) > 0 {
		require.NoError(h.t, json.Unmarshal(b, &m), "body %q is not a JSON object", b)
	}
	return resp.StatusCode, m
}

func requireCode(t *testing.T, err error, status int, code string) {
	t.Helper()
	require.Error(t, err)
	var e *fmgs.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, status, e.Status, "%v", err)
	assert.Equal(t, code, e.Code, "%v", err)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// requireCabooseInvalid: today's MGS answers a caboose read of a slot
// without a valid image with 503 SpCommunicationFailed; only the message
// tells (the phrase Nexus matches on).
func requireCabooseInvalid(t *testing.T, err error) {
	t.Helper()
	requireCode(t, err, 503, fmgs.CodeSpCommunicationFailed)
	assert.True(t, fmgs.CabooseInvalid(err), "%v", err)
}
