package nexus_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/openapi"
	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/nexus"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
)

// TestMain stops the PostgreSQL the saga test may have started (no
// Temporal: these tests need only fleetsim and, for sagas, a database).
func TestMain(m *testing.M) {
	code := m.Run()
	if pg != nil {
		_ = pg.Stop()
	}
	os.Exit(code)
}

var (
	pgOnce sync.Once
	pg     *devstack.Postgres
	pgErr  error
)

// sagaDB is a fresh PostgreSQL database for the Nexus saga table.
func sagaDB(t *testing.T) (string, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	pgOnce.Do(func() {
		key := filepath.Join(os.TempDir(), fmt.Sprintf("fleetsim-nexus-test-%d", os.Getpid()))
		pg, pgErr = devstack.FindOrStartPostgres(ctx, key, zerolog.Nop())
	})
	require.NoError(t, pgErr)
	name := "fsn_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16]
	url, err := devstack.CreateDatabase(ctx, pg.URL, name)
	require.NoError(t, err)
	t.Cleanup(func() { _ = devstack.DropDatabase(context.Background(), pg.URL, name) })
	db, err := sql.Open("postgres", url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return url, db
}

const (
	rackID = "rack-test"
	// testSpeedUp makes the executor's 60 s period 0.3 s and a zone
	// removal 25 ms.
	testSpeedUp = 200
)

var (
	lockstep = openapi.MustLoad(openapi.NexusLockstep)
	sledAPI  = openapi.MustLoad(openapi.SledAgent)
	mgsAPI   = openapi.MustLoad(openapi.MGS)
)

// rackSpec is one rack (spec.SampleRack) with the given owners.
func rackSpec(t *testing.T, owners spec.RackOwners, zoneKinds ...[]string) *spec.Spec {
	t.Helper()
	rack := spec.SampleRack(rackID, zoneKinds...)
	rack.Owners = owners
	s := &spec.Spec{Seed: 7, SpeedUp: testSpeedUp, Timings: spec.DefaultTimings(), Racks: []spec.Rack{rack}}
	require.NoError(t, s.Validate())
	return s
}

// startSim starts fleetsim with every answer of the lockstep, sled-agent and
// MGS APIs held to its document.
func startSim(t *testing.T, s *spec.Spec, databaseURL string) *fleetsim.Server {
	t.Helper()
	contracts := map[string]*openapi.Contract{"nexus-lockstep": lockstep, "sled-agent": sledAPI, "mgs": mgsAPI}
	srv, err := fleetsim.Start(context.Background(), fleetsim.Env{
		Spec: s, Faults: faults.NewRegistry(s.Seed), DatabaseURL: databaseURL,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
		Check: func(api, prefix string, h http.Handler) http.Handler {
			c := contracts[api]
			if c == nil {
				return h
			}
			return openapi.Middleware(c, prefix, t, func(r *http.Request) bool { return c.Operation(r, prefix) == "" }, h)
		},
	}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// lockstepClient sends requests to the rack's lockstep API; every request
// and answer is checked against the document.
type lockstepClient struct {
	t    *testing.T
	base string
	http *http.Client
}

// unchecked is c for a request that breaks the document on purpose (its
// answer is still checked by fleetsim's side).
func (c *lockstepClient) unchecked() *lockstepClient {
	return &lockstepClient{t: c.t, base: c.base, http: &http.Client{Timeout: 10 * time.Second}}
}

func newLockstep(t *testing.T, srv *fleetsim.Server) *lockstepClient {
	prefix := "/nexus/" + rackID
	return &lockstepClient{t: t, base: srv.URL + prefix, http: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &openapi.Transport{Contract: lockstep, Prefix: prefix, Rep: t, Responses: true},
	}}
}

// do sends body (nil: none) and decodes a 200 answer into out; it returns
// the status and the error body of a refusal.
func (c *lockstepClient) do(method, path string, body, out any) (int, errorBody) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(c.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	require.NoError(c.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	var eb errorBody
	switch {
	case resp.StatusCode >= 400:
		require.NoError(c.t, json.Unmarshal(raw, &eb), "error body: %s", raw)
	case out != nil:
		require.NoError(c.t, json.Unmarshal(raw, out), "body: %s", raw)
	}
	return resp.StatusCode, eb
}

type errorBody struct {
	RequestID string `json:"request_id"`
	ErrorCode string `json:"error_code"`
	Message   string `json:"message"`
}

func (c *lockstepClient) target() nexus.Target {
	var t nexus.Target
	status, eb := c.do(http.MethodGet, "/deployment/blueprints/target", nil, &t)
	require.Equal(c.t, http.StatusOK, status, eb.Message)
	return t
}

func (c *lockstepClient) blueprint(id uuid.UUID) *nexus.Blueprint {
	var bp nexus.Blueprint
	status, eb := c.do(http.MethodGet, "/deployment/blueprints/all/"+id.String(), nil, &bp)
	require.Equal(c.t, http.StatusOK, status, eb.Message)
	return &bp
}

func (c *lockstepClient) targetBlueprint() *nexus.Blueprint { return c.blueprint(c.target().TargetID) }

// makeChildTarget imports a copy of the current target with a new ID and
// the target as parent, changed by edit, and makes it the target.
func (c *lockstepClient) makeChildTarget(edit func(*nexus.Blueprint), enabled bool) *nexus.Blueprint {
	c.t.Helper()
	parent := c.targetBlueprint()
	child := *parent
	raw, _ := json.Marshal(parent)
	require.NoError(c.t, json.Unmarshal(raw, &child)) // deep copy
	pid := parent.ID
	child.ID, child.ParentBlueprintID = uuid.New(), &pid
	child.Comment, child.Creator = "test edit", "fleetsim test"
	child.Source = json.RawMessage(`{"source":"test"}`)
	edit(&child)
	status, eb := c.do(http.MethodPost, "/deployment/blueprints/import", &child, nil)
	require.Equal(c.t, http.StatusNoContent, status, eb.Message)
	status, eb = c.do(http.MethodPost, "/deployment/blueprints/target", map[string]any{"target_id": child.ID, "enabled": enabled}, nil)
	require.Equal(c.t, http.StatusOK, status, eb.Message)
	return &child
}

func nexusTruth(t *testing.T, srv *fleetsim.Server) nexus.RackTruth {
	t.Helper()
	var tr nexus.Truth
	getJSON(t, srv.URL+"/truth/nexus", &tr)
	require.Len(t, tr.Racks, 1)
	return tr.Racks[0]
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
}

// sledClient is the sled's own sled-agent (the product's client, checked
// against the document).
func sledClient(t *testing.T, srv *fleetsim.Server, id uuid.UUID) *sledagent.Client {
	t.Helper()
	var tr struct {
		Sleds []struct {
			ID      uuid.UUID `json:"id"`
			Address string    `json:"address"`
		} `json:"sleds"`
	}
	getJSON(t, srv.URL+"/truth/sled", &tr)
	for _, s := range tr.Sleds {
		if s.ID == id {
			return sledagent.New("http://"+s.Address, &http.Client{Timeout: 10 * time.Second,
				Transport: &openapi.Transport{Contract: sledAPI, Rep: t, Responses: true}})
		}
	}
	t.Fatalf("no sled %s", id)
	return nil
}
