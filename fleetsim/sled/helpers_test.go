package sled_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/openapi"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// testSpeedUp turns the default 5 s zone removal into 50 ms.
const testSpeedUp = 100

// rackSpec builds a one-rack spec whose sleds run the given zone kinds, all
// at generation 3.
func rackSpec(t *testing.T, zoneKinds ...[]string) *spec.Spec {
	t.Helper()
	return rackSpecMode(t, "", zoneKinds...)
}

// rackSpecMode is rackSpec with the rack's sledAgentMode.
func rackSpecMode(t *testing.T, mode string, zoneKinds ...[]string) *spec.Spec {
	t.Helper()
	s := &spec.Spec{Seed: 7, SpeedUp: testSpeedUp, Timings: spec.DefaultTimings()}
	rack := spec.SampleRack("rack-test", zoneKinds...)
	rack.SledAgentMode = mode
	// The sled-agent alone: no Nexus writes the sleds' configs (its
	// owners, on by default, are fleetsim/nexus's tests).
	rack.Owners = spec.NoOwners()
	s.Racks = []spec.Rack{rack}
	require.NoError(t, s.Validate())
	return s
}

func startSim(t *testing.T, s *spec.Spec, databaseURL string) *fleetsim.Server {
	t.Helper()
	srv, err := fleetsim.Start(context.Background(), fleetsim.Env{
		Spec: s, Faults: faults.NewRegistry(s.Seed), DatabaseURL: databaseURL,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// sledURL is the sled's own sled-agent listener, behind a proxy that checks
// every response of a documented operation against the sled-agent OpenAPI
// document (violations fail the test).
func sledURL(t *testing.T, srv *fleetsim.Server, id uuid.UUID) string {
	t.Helper()
	var addr string
	for _, s := range truth(t, srv).Sleds {
		if s.ID == id {
			addr = s.Address
		}
	}
	require.NotEmpty(t, addr, "sled %s has no address", id)
	target, err := url.Parse("http://" + addr)
	require.NoError(t, err)
	contract := openapi.MustLoad(openapi.SledAgent)
	undocumented := func(r *http.Request) bool { return contract.Operation(r, "") == "" }
	proxy := httptest.NewServer(openapi.Middleware(contract, "", t, undocumented, httputil.NewSingleHostReverseProxy(target)))
	t.Cleanup(proxy.Close)
	return proxy.URL
}

func client(t *testing.T, srv *fleetsim.Server, id uuid.UUID) *sledagent.Client {
	return sledagent.New(sledURL(t, srv, id), &http.Client{Timeout: 30 * time.Second})
}

func inventory(t *testing.T, c *sledagent.Client) *sledagent.Inventory {
	t.Helper()
	inv, err := c.Inventory(context.Background())
	require.NoError(t, err)
	return inv
}

func truth(t *testing.T, srv *fleetsim.Server) sled.Truth {
	t.Helper()
	resp, err := http.Get(srv.URL + "/truth/sled")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var tr sled.Truth
	dec := json.NewDecoder(resp.Body)
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&tr))
	return tr
}

func sledTruth(t *testing.T, srv *fleetsim.Server, id uuid.UUID) sled.SledTruth {
	t.Helper()
	for _, s := range truth(t, srv).Sleds {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("sled %s not in truth", id)
	return sled.SledTruth{}
}

func nexusTruth(t *testing.T, srv *fleetsim.Server, zone uuid.UUID) sled.NexusTruth {
	t.Helper()
	for _, n := range truth(t, srv).Nexus {
		if n.ZoneID == zone {
			return n
		}
	}
	t.Fatalf("nexus %s not in truth", zone)
	return sled.NexusTruth{}
}

func armFault(t *testing.T, srv *fleetsim.Server, f faults.Fault) int {
	t.Helper()
	b, _ := json.Marshal(f)
	resp, err := http.Post(srv.URL+"/faults", "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	var out struct{ ID int }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.ID
}

func listFaults(t *testing.T, srv *fleetsim.Server) []faults.Fault {
	t.Helper()
	return getFaults(t, srv, "/faults")
}

// getFaults reads a fault list (GET /faults, /faults/fired).
func getFaults(t *testing.T, srv *fleetsim.Server, path string) []faults.Fault {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out []faults.Fault
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

// rawRequest sends body as-is and returns the status and the decoded
// Dropshot error body (zero when the answer has no body).
func rawRequest(t *testing.T, method, url, body string) (int, errorBody) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("api-version", sled.APIVersion)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var eb errorBody
	if len(raw) > 0 && resp.StatusCode >= 400 {
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"), "error body must be JSON: %s", raw)
		require.NoError(t, json.Unmarshal(raw, &eb), "error body: %s", raw)
		require.NotEmpty(t, eb.RequestID)
		require.NotEmpty(t, eb.Message)
	}
	return resp.StatusCode, eb
}

type errorBody struct {
	RequestID string `json:"request_id"`
	ErrorCode string `json:"error_code"`
	Message   string `json:"message"`
}

func zoneIDs(s *spec.Spec, sledIdx int) []uuid.UUID {
	var out []uuid.UUID
	for _, z := range s.Racks[0].Sleds[sledIdx].Zones {
		out = append(out, z.ID)
	}
	return out
}

// awaitZoneGone waits for inventory to prove zone removed: the last
// reconciliation applied generation >= gen and the zone is no longer on the
// sled (neither running nor failed to shut down).
func awaitZoneGone(t *testing.T, c *sledagent.Client, zone uuid.UUID, gen uint64) *sledagent.Inventory {
	t.Helper()
	var inv *sledagent.Inventory
	require.Eventually(t, func() bool {
		inv = inventory(t, c)
		present, _ := inv.ZonePresent(zone)
		return inv.LastReconciliation != nil && inv.LastReconciliation.LastReconciledConfig.Generation >= gen && !present
	}, 10*time.Second, 5*time.Millisecond, "zone %s never gone at generation %d", zone, gen)
	return inv
}
