package dc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/dc"
	"github.com/fleetsaga/fleetsaga/fleetsim/domain"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// speedUp makes a 45 s install take 45 ms and cn-agent's 1 h task timeout
// 3.6 s.
const speedUp = 1000

type env struct {
	url    string
	sim    *fleetsim.Server
	cnapi  *triton.CNAPI
	sapi   *triton.SAPI
	imgapi *triton.IMGAPI
	dc     spec.Datacenter
}

func start(t *testing.T, d spec.Datacenter) *env {
	t.Helper()
	sp := &spec.Spec{Seed: 7, SpeedUp: speedUp, Timings: spec.DefaultTimings(), Datacenter: d}
	require.NoError(t, sp.Validate())
	srv, err := fleetsim.Start(context.Background(), domain.Env{Spec: sp}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	e := &env{url: srv.URL, sim: srv, dc: d}
	e.cnapi, err = triton.NewCNAPI(srv.URL + "/cnapi")
	require.NoError(t, err)
	e.sapi, err = triton.NewSAPI(srv.URL + "/sapi")
	require.NoError(t, err)
	e.imgapi, err = triton.NewIMGAPI(srv.URL + "/imgapi")
	require.NoError(t, err)
	return e
}

func (e *env) truth(t *testing.T, server uuid.UUID) dc.Truth {
	t.Helper()
	u := e.url + "/truth/dc"
	if server != uuid.Nil {
		u += "?server=" + server.String()
	}
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var tr dc.Truth
	dec := json.NewDecoder(resp.Body)
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&tr))
	return tr
}

func (e *env) arm(t *testing.T, f faults.Fault) int {
	t.Helper()
	b, _ := json.Marshal(f)
	resp, err := http.Post(e.url+"/faults", "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	var out struct{ ID int }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.ID
}

func (e *env) clearFault(t *testing.T, id int) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, fmt.Sprintf("%s/faults/%d", e.url, id), nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
}

// raw sends a request and returns status and the decoded restify error.
func (e *env) raw(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if resp.StatusCode != http.StatusNoContent {
		require.NoErrorf(t, json.Unmarshal(b, &m), "body %q is not JSON", b)
	}
	return resp.StatusCode, m
}

func small() spec.Datacenter { return spec.GenerateDatacenter(4, 1) }

func newImage(t *testing.T, d spec.Datacenter, agent string) spec.Image {
	im, ok := d.ImageFor(agent, spec.GeneratedNewVersion)
	require.True(t, ok)
	return im
}

func waitDone(t *testing.T, e *env, id string) triton.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		task, err := e.cnapi.WaitTask(ctx, id, 10*time.Second)
		require.NoError(t, err)
		if task.Done() {
			return task
		}
	}
}

func agentOf(t *testing.T, as []triton.Agent, name string) triton.Agent {
	t.Helper()
	for _, a := range as {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("agent %s not in %v", name, as)
	return triton.Agent{}
}

func specAgent(t *testing.T, as []spec.Agent, name string) spec.Agent {
	t.Helper()
	for _, a := range as {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("agent %s not in %v", name, as)
	return spec.Agent{}
}

func TestListServersPagingAndFilters(t *testing.T) {
	d := spec.GenerateDatacenter(2500, 3)
	f := false
	d.Servers[5].Setup = &f
	e := start(t, d)
	ctx := context.Background()

	p1, err := e.cnapi.ListServersPage(ctx, triton.ListServersOptions{}, 1000, 0)
	require.NoError(t, err)
	require.Len(t, p1, 1000)
	assert.Empty(t, p1[0].Agents, "agents only with extras=agents")
	p3, err := e.cnapi.ListServersPage(ctx, triton.ListServersOptions{}, 1000, 2000)
	require.NoError(t, err)
	require.Len(t, p3, 500)
	assert.Equal(t, d.Servers[2000].UUID, p3[0].UUID)

	all, err := e.cnapi.ListServers(ctx, triton.ListServersOptions{Agents: true, PageSize: 700})
	require.NoError(t, err)
	require.Len(t, all, 2500)
	assert.Len(t, all[1].Agents, len(d.Servers[1].Agents))

	tr := true
	setup, err := e.cnapi.ListServers(ctx, triton.ListServersOptions{Setup: &tr})
	require.NoError(t, err)
	assert.Len(t, setup, 2499)
	unsetup, err := e.cnapi.ListServers(ctx, triton.ListServersOptions{Setup: &f})
	require.NoError(t, err)
	require.Len(t, unsetup, 1)
	assert.Equal(t, d.Servers[5].UUID, unsetup[0].UUID)

	some, err := e.cnapi.ListServers(ctx, triton.ListServersOptions{UUIDs: []uuid.UUID{d.Servers[9].UUID, d.Servers[7].UUID}})
	require.NoError(t, err)
	assert.Len(t, some, 2)
	byName, err := e.cnapi.ListServers(ctx, triton.ListServersOptions{Hostname: d.Servers[42].Hostname})
	require.NoError(t, err)
	require.Len(t, byName, 1)
	assert.Equal(t, "r01", byName[0].Trait("rack"))

	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "offset=-1", "setup=maybe", "extras=bogus", "uuids=nope"} {
		st, body := e.raw(t, "GET", "/cnapi/servers?"+q, "")
		assert.Equal(t, http.StatusConflict, st, q)
		assert.Equal(t, triton.CodeInvalidArgument, body["code"], q)
	}
}

func TestBadRequestsAreJSON4xx(t *testing.T) {
	e := start(t, small())
	srv := e.dc.Servers[0].UUID.String()
	cases := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"GET", "/cnapi/servers/" + uuid.NewString(), "", 404, triton.CodeResourceNotFound},
		{"GET", "/cnapi/servers/not-a-uuid", "", 409, triton.CodeInvalidArgument},
		{"POST", "/cnapi/servers/" + srv + "/install-agent", "{bad", 400, triton.CodeInvalidContent},
		{"POST", "/cnapi/servers/" + srv + "/install-agent", `{"image_uuid":"` + uuid.NewString() + `","x":1}`, 400, triton.CodeInvalidContent},
		{"POST", "/cnapi/servers/" + srv + "/install-agent", `{}`, 409, triton.CodeInvalidArgument},
		{"POST", "/cnapi/servers/" + srv + "/install-agent", `{"image_uuid":"zzz"}`, 400, triton.CodeInvalidContent},
		{"POST", "/cnapi/servers/" + srv, `{"agents":[{"name":"x"}]}`, 409, triton.CodeInvalidArgument},
		{"POST", "/cnapi/servers/" + srv, `{"agents":[]} {}`, 400, triton.CodeInvalidContent},
		{"POST", "/cnapi/servers/" + srv, `{"comments":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "PayloadTooLarge"},
		{"GET", "/cnapi/tasks/nope", "", 404, triton.CodeResourceNotFound},
		{"GET", "/cnapi/tasks/nope/wait?timeout=0", "", 409, triton.CodeInvalidArgument},
		{"GET", "/cnapi/nowhere", "", 404, triton.CodeResourceNotFound},
		{"PATCH", "/cnapi/servers", "", 404, triton.CodeResourceNotFound},
		{"GET", "/sapi/services/" + uuid.NewString(), "", 404, triton.CodeResourceNotFound},
		{"GET", "/sapi/instances?service_uuid=bad", "", 409, triton.CodeInvalidArgument},
		{"PUT", "/sapi/instances/" + uuid.NewString(), `{"action":"explode"}`, 409, triton.CodeInvalidArgument},
		{"POST", "/sapi/instances", `{"params":{}}`, 409, triton.CodeInvalidArgument},
		{"POST", "/sapi/instances", `{"service_uuid":"` + uuid.NewString() + `","params":{}}`, 404, triton.CodeResourceNotFound},
		{"GET", "/imgapi/images/" + uuid.NewString(), "", 404, triton.CodeResourceNotFound},
		{"GET", "/imgapi/images/" + uuid.NewString() + "/file", "", 404, triton.CodeResourceNotFound},
		{"GET", "/imgapi/images/x/file", "", 409, triton.CodeInvalidArgument},
		{"GET", "/truth/dc?server=x", "", 409, triton.CodeInvalidArgument},
	}
	for _, c := range cases {
		st, body := e.raw(t, c.method, c.path, c.body)
		assert.Equalf(t, c.status, st, "%s %s", c.method, c.path)
		assert.Equalf(t, c.code, body["code"], "%s %s: %v", c.method, c.path, body)
		assert.NotEmptyf(t, body["message"], "%s %s", c.method, c.path)
	}
}

func TestInstallAgentCompletesAndRefreshesRecord(t *testing.T) {
	d := small()
	e := start(t, d)
	ctx := context.Background()
	srv := d.Servers[1]
	im := newImage(t, d, "vm-agent")
	before := specAgent(t, srv.Agents, "vm-agent") // spec agent: imageUUID, uuid

	id, err := e.cnapi.InstallAgent(ctx, srv.UUID, triton.InstallAgentRequest{ImageUUID: im.UUID, PackageName: "vm-agent"})
	require.NoError(t, err)
	task, err := e.cnapi.GetTask(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, triton.TaskActive, task.Status)
	assert.Equal(t, srv.UUID, task.ServerUUID)
	assert.Equal(t, dc.TaskAgentInstall, task.Task)

	task = waitDone(t, e, id)
	require.Equal(t, triton.TaskComplete, task.Status, task.ErrorMessage())
	assert.Empty(t, task.ErrorMessage())
	assert.Equal(t, "finish", task.History[len(task.History)-1].Name)

	got, err := e.cnapi.GetServer(ctx, srv.UUID)
	require.NoError(t, err)
	a := agentOf(t, got.Agents, "vm-agent")
	assert.Equal(t, im.UUID, a.ImageUUID)
	assert.Equal(t, spec.GeneratedNewVersion, a.Version)
	assert.Equal(t, before.UUID, a.UUID, "the agent keeps its instance UUID across upgrades")

	tr := e.truth(t, srv.UUID)
	require.Len(t, tr.Servers, 1)
	assert.Equal(t, im.UUID, agentOf(t, tr.Servers[0].Agents, "vm-agent").ImageUUID)
	require.Len(t, tr.Installs, 1)
	rec := tr.Installs[0]
	assert.Equal(t, triton.TaskComplete, rec.Outcome)
	assert.Equal(t, "vm-agent", rec.Agent)
	assert.Equal(t, before.ImageUUID, rec.PreviousImage)
	assert.False(t, rec.Finished.Before(rec.Started))
	// The task moves the actual state only: SAPI intent is fleetsaga's job.
	for _, in := range tr.Servers[0].Instances {
		if in.Service == "vm-agent" {
			assert.Equal(t, before.ImageUUID, in.ImageUUID)
		}
	}
	// Other servers were not touched.
	other := e.truth(t, d.Servers[2].UUID)
	assert.Equal(t, before.ImageUUID, agentOf(t, other.Servers[0].Agents, "vm-agent").ImageUUID)
	assert.Empty(t, other.Installs)
}

func TestOneAgentTaskAtATimePerServer(t *testing.T) {
	d := small()
	d.Servers[0].InstallSlowness = 20 // 900 ms
	e := start(t, d)
	ctx := context.Background()
	srv := d.Servers[0].UUID
	vm, net := newImage(t, d, "vm-agent"), newImage(t, d, "net-agent")

	id, err := e.cnapi.InstallAgent(ctx, srv, triton.InstallAgentRequest{ImageUUID: vm.UUID})
	require.NoError(t, err)
	_, err = e.cnapi.InstallAgent(ctx, srv, triton.InstallAgentRequest{ImageUUID: net.UUID})
	require.Error(t, err)
	assert.True(t, triton.HasCode(err, triton.CodeServerBusy), err)
	assert.True(t, triton.IsRetryable(err), "busy clears by itself")

	again, err := e.cnapi.InstallAgent(ctx, srv, triton.InstallAgentRequest{ImageUUID: vm.UUID})
	require.NoError(t, err)
	assert.Equal(t, id, again, "a repeated request (lost answer) gets the same task")
	// Another server is independent.
	_, err = e.cnapi.InstallAgent(ctx, d.Servers[1].UUID, triton.InstallAgentRequest{ImageUUID: net.UUID})
	require.NoError(t, err)

	assert.Equal(t, triton.TaskComplete, waitDone(t, e, id).Status)
	id2, err := e.cnapi.InstallAgent(ctx, srv, triton.InstallAgentRequest{ImageUUID: net.UUID})
	require.NoError(t, err)
	assert.Equal(t, triton.TaskComplete, waitDone(t, e, id2).Status)
	installs := e.truth(t, srv).Installs
	require.Len(t, installs, 2)
	assert.True(t, !installs[1].Started.Before(installs[0].Finished), "tasks on one server never overlap")
}

func TestInstallTaskChecksImage(t *testing.T) {
	d := small()
	vm := newImage(t, d, "vm-agent")
	corrupt := vm
	corrupt.UUID, corrupt.Version, corrupt.SHA1 = uuid.New(), "1.2.0", strings.Repeat("0", 40)
	short := vm
	short.UUID, short.Version, short.FileSize = uuid.New(), "1.3.0", vm.Size-1
	zone := spec.Image{UUID: uuid.New(), Name: "vmapi", Version: "1", Type: spec.ImageTypeZone, Size: 100}
	d.Images = append(d.Images, corrupt, short, zone)
	e := start(t, d)
	ctx := context.Background()

	cases := []struct {
		name string
		req  triton.InstallAgentRequest
		want string
	}{
		{"missing image", triton.InstallAgentRequest{ImageUUID: uuid.New()}, "not found"},
		{"not an agent", triton.InstallAgentRequest{ImageUUID: zone.UUID}, "not an agent image"},
		{"wrong package", triton.InstallAgentRequest{ImageUUID: vm.UUID, PackageName: "net-agent"}, `is agent "vm-agent", not "net-agent"`},
		{"digest mismatch", triton.InstallAgentRequest{ImageUUID: corrupt.UUID}, "sha1"},
		{"size mismatch", triton.InstallAgentRequest{ImageUUID: short.UUID}, "bytes, manifest says"},
	}
	for i, c := range cases {
		srv := d.Servers[i%len(d.Servers)]
		id, err := e.cnapi.InstallAgent(ctx, srv.UUID, c.req)
		require.NoError(t, err, c.name)
		task := waitDone(t, e, id)
		assert.Equal(t, triton.TaskFailure, task.Status, c.name)
		// As CNAPI records a failure: the error first, then finish.
		require.Len(t, task.History, 2, c.name)
		assert.Equal(t, "error", task.History[0].Name, c.name)
		assert.Equal(t, "finish", task.History[1].Name, c.name)
		assert.Contains(t, task.ErrorMessage(), c.want, c.name)
	}
	tr := e.truth(t, uuid.Nil)
	for i, s := range tr.Servers {
		assert.Equal(t, d.Servers[i].Agents[3].ImageUUID, agentOf(t, s.Agents, "vm-agent").ImageUUID, "nothing installed on %s", s.Hostname)
		assert.Empty(t, s.ActiveTask)
	}
	assert.Len(t, tr.Installs, len(cases))
	for _, rec := range tr.Installs {
		assert.Equal(t, triton.TaskFailure, rec.Outcome)
		assert.NotEmpty(t, rec.Error)
	}
}

func TestTaskFailureFaultRestoresBackup(t *testing.T) {
	d := small()
	e := start(t, d)
	ctx := context.Background()
	srv := d.Servers[2]
	im := newImage(t, d, "cmon-agent")
	sa := specAgent(t, srv.Agents, "cmon-agent")
	old := triton.Agent{Name: sa.Name, Version: sa.Version, ImageUUID: sa.ImageUUID, UUID: sa.UUID}
	e.arm(t, faults.Fault{Kind: faults.TaskFailure, Target: "server/" + srv.UUID.String(), Times: 1})

	id, err := e.cnapi.InstallAgent(ctx, srv.UUID, triton.InstallAgentRequest{ImageUUID: im.UUID})
	require.NoError(t, err)
	task := waitDone(t, e, id)
	require.Equal(t, triton.TaskFailure, task.Status)
	assert.Contains(t, task.ErrorMessage(), "task_failure")
	assert.Contains(t, task.ErrorMessage(), "restored")
	tr := e.truth(t, srv.UUID)
	assert.Equal(t, old, agentOf(t, tr.Servers[0].Agents, "cmon-agent"), "backup restored")
	assert.Equal(t, old, agentOf(t, tr.Servers[0].Record, "cmon-agent"))

	// The fault fired once; the retry installs.
	id, err = e.cnapi.InstallAgent(ctx, srv.UUID, triton.InstallAgentRequest{ImageUUID: im.UUID})
	require.NoError(t, err)
	require.Equal(t, triton.TaskComplete, waitDone(t, e, id).Status)
	tr = e.truth(t, srv.UUID)
	assert.Equal(t, im.UUID, agentOf(t, tr.Servers[0].Agents, "cmon-agent").ImageUUID)
	require.Len(t, tr.Installs, 2)
	assert.Equal(t, []string{triton.TaskFailure, triton.TaskComplete}, []string{tr.Installs[0].Outcome, tr.Installs[1].Outcome})
}

// A task_failure aimed at one agent (server/<uuid>/<agent>) lets the
// server's other agents install and fails that agent's task.
func TestTaskFailureFaultAimedAtOneAgent(t *testing.T) {
	d := small()
	e := start(t, d)
	ctx := context.Background()
	srv := d.Servers[2]
	other, aimed := newImage(t, d, "smartlogin"), newImage(t, d, "cmon-agent")
	e.arm(t, faults.Fault{Kind: faults.TaskFailure, Target: "server/" + srv.UUID.String() + "/cmon-agent", Times: 1})

	id, err := e.cnapi.InstallAgent(ctx, srv.UUID, triton.InstallAgentRequest{ImageUUID: other.UUID})
	require.NoError(t, err)
	require.Equal(t, triton.TaskComplete, waitDone(t, e, id).Status, "another agent's task is not aimed at")
	id, err = e.cnapi.InstallAgent(ctx, srv.UUID, triton.InstallAgentRequest{ImageUUID: aimed.UUID})
	require.NoError(t, err)
	task := waitDone(t, e, id)
	require.Equal(t, triton.TaskFailure, task.Status)
	assert.Contains(t, task.ErrorMessage(), "task_failure")
}

func TestServerOfflineFault(t *testing.T) {
	d := small()
	e := start(t, d)
	ctx := context.Background()
	srv := d.Servers[3].UUID
	im := newImage(t, d, "smartlogin")

	fid := e.arm(t, faults.Fault{Kind: faults.ServerOffline, Target: "server/" + srv.String()})
	s, err := e.cnapi.GetServer(ctx, srv)
	require.NoError(t, err)
	assert.Equal(t, triton.StatusUnknown, s.Status)
	list, err := e.cnapi.ListServers(ctx, triton.ListServersOptions{})
	require.NoError(t, err)
	assert.Equal(t, triton.StatusUnknown, list[3].Status)
	assert.Equal(t, triton.StatusRunning, list[2].Status)
	_, err = e.cnapi.InstallAgent(ctx, srv, triton.InstallAgentRequest{ImageUUID: im.UUID})
	require.Error(t, err)
	assert.True(t, triton.HasCode(err, triton.CodeServerNotRunning), err)
	assert.False(t, triton.IsRetryable(err))
	assert.Empty(t, e.truth(t, srv).Installs, "an offline server is not touched")

	e.clearFault(t, fid)
	s, err = e.cnapi.GetServer(ctx, srv)
	require.NoError(t, err)
	assert.Equal(t, triton.StatusRunning, s.Status)
}

func TestServerGoingOfflineStallsTaskUntilBack(t *testing.T) {
	d := small()
	d.Servers[0].InstallSlowness = 4 // 180 ms
	e := start(t, d)
	ctx := context.Background()
	srv := d.Servers[0].UUID
	im := newImage(t, d, "firewaller")

	id, err := e.cnapi.InstallAgent(ctx, srv, triton.InstallAgentRequest{ImageUUID: im.UUID})
	require.NoError(t, err)
	fid := e.arm(t, faults.Fault{Kind: faults.ServerOffline, Target: "server/" + srv.String()})
	time.Sleep(500 * time.Millisecond)
	task, err := e.cnapi.GetTask(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, triton.TaskActive, task.Status, "a hung server keeps its task active")
	e.clearFault(t, fid)
	assert.Equal(t, triton.TaskComplete, waitDone(t, e, id).Status)
}

func TestTaskTimesOutWhenServerNeverReturns(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the scaled 1 h task timeout (3.6 s)")
	}
	d := small()
	e := start(t, d)
	ctx := context.Background()
	srv := d.Servers[1].UUID
	id, err := e.cnapi.InstallAgent(ctx, srv, triton.InstallAgentRequest{ImageUUID: newImage(t, d, "amon-agent").UUID})
	require.NoError(t, err)
	e.arm(t, faults.Fault{Kind: faults.ServerOffline, Target: "server/" + srv.String()})
	task := waitDone(t, e, id)
	assert.Equal(t, triton.TaskFailure, task.Status)
	assert.Contains(t, task.ErrorMessage(), "timed out")
	assert.Equal(t, d.Servers[1].Agents[6], spec.Agent{
		Name: "amon-agent", Version: spec.GeneratedOldVersion,
		ImageUUID: agentOf(t, e.truth(t, srv).Servers[0].Agents, "amon-agent").ImageUUID,
		UUID:      d.Servers[1].Agents[6].UUID,
	})
}

func TestUnsetupAndSpecOfflineServers(t *testing.T) {
	d := small()
	f := false
	d.Servers[1].Setup = &f
	d.Servers[2].Status = spec.ServerUnknown
	e := start(t, d)
	ctx := context.Background()
	im := newImage(t, d, "vm-agent")

	_, err := e.cnapi.InstallAgent(ctx, d.Servers[1].UUID, triton.InstallAgentRequest{ImageUUID: im.UUID})
	assert.True(t, triton.HasCode(err, triton.CodeServerNotSetup), err)
	s, err := e.cnapi.GetServer(ctx, d.Servers[2].UUID)
	require.NoError(t, err)
	assert.Equal(t, triton.StatusUnknown, s.Status)
	_, err = e.cnapi.InstallAgent(ctx, d.Servers[2].UUID, triton.InstallAgentRequest{ImageUUID: im.UUID})
	assert.True(t, triton.HasCode(err, triton.CodeServerNotRunning), err)
	assert.Empty(t, e.truth(t, uuid.Nil).Installs)
}

func TestStaleRefreshAndExplicitServerUpdate(t *testing.T) {
	d := small()
	d.Servers[0].StaleRefresh = true
	e := start(t, d)
	ctx := context.Background()
	srv := d.Servers[0].UUID
	im := newImage(t, d, "net-agent")

	id, err := e.cnapi.InstallAgent(ctx, srv, triton.InstallAgentRequest{ImageUUID: im.UUID})
	require.NoError(t, err)
	require.Equal(t, triton.TaskComplete, waitDone(t, e, id).Status)
	s, err := e.cnapi.GetServer(ctx, srv)
	require.NoError(t, err)
	stale := agentOf(t, s.Agents, "net-agent")
	assert.NotEqual(t, im.UUID, stale.ImageUUID, "the refresh failed: CNAPI's record is stale")
	assert.Equal(t, im.UUID, agentOf(t, e.truth(t, srv).Servers[0].Agents, "net-agent").ImageUUID)

	// fleetsaga's explicit refresh.
	agents := s.Agents
	for i := range agents {
		if agents[i].Name == "net-agent" {
			agents[i].ImageUUID, agents[i].Version = im.UUID, im.Version
		}
	}
	require.NoError(t, e.cnapi.UpdateServer(ctx, srv, triton.ServerUpdate{Agents: agents}))
	s, err = e.cnapi.GetServer(ctx, srv)
	require.NoError(t, err)
	assert.Equal(t, im.UUID, agentOf(t, s.Agents, "net-agent").ImageUUID)
}

func TestSAPIServicesAndInstances(t *testing.T) {
	d := small()
	e := start(t, d)
	ctx := context.Background()
	svcs, err := e.sapi.ListServices(ctx, triton.ListServicesOptions{Type: triton.ServiceTypeAgent})
	require.NoError(t, err)
	assert.Len(t, svcs, len(spec.GeneratedAgents))
	vmSvcs, err := e.sapi.ListServices(ctx, triton.ListServicesOptions{Name: "vm-agent"})
	require.NoError(t, err)
	require.Len(t, vmSvcs, 1)
	vm := vmSvcs[0]
	im := newImage(t, d, "vm-agent")

	got, err := e.sapi.SetServiceImage(ctx, vm.UUID, im.UUID)
	require.NoError(t, err)
	assert.Equal(t, im.UUID, got.Params.ImageUUID)
	got, err = e.sapi.GetService(ctx, vm.UUID)
	require.NoError(t, err)
	assert.Equal(t, im.UUID, got.Params.ImageUUID)

	insts, err := e.sapi.ListInstances(ctx, vm.UUID)
	require.NoError(t, err)
	require.Len(t, insts, len(d.Servers))
	in := insts[0]
	assert.Equal(t, triton.ServiceTypeAgent, in.Type)
	upd, err := e.sapi.SetInstanceImage(ctx, in.UUID, in.Params.ServerUUID, im.UUID)
	require.NoError(t, err)
	assert.Equal(t, im.UUID, upd.Params.ImageUUID)
	_, err = e.sapi.SetInstanceImage(ctx, in.UUID, d.Servers[3].UUID, im.UUID)
	assert.True(t, triton.HasCode(err, triton.CodeInvalidArgument), "an instance cannot move servers: %v", err)

	// Create with a stable UUID: a repeat is accepted and overwrites the
	// instance, as SAPI's putObject does (no 409).
	require.NoError(t, e.sapi.DeleteInstance(ctx, insts[1].UUID))
	_, err = e.sapi.GetInstance(ctx, insts[1].UUID)
	assert.True(t, triton.IsNotFound(err))
	req := triton.CreateInstanceRequest{UUID: insts[1].UUID, ServiceUUID: vm.UUID,
		Params: triton.InstanceParams{ServerUUID: insts[1].Params.ServerUUID, ImageUUID: im.UUID}}
	created, err := e.sapi.CreateInstance(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, insts[1].UUID, created.UUID)
	again := req
	again.Params.ImageUUID = insts[1].Params.ImageUUID
	_, err = e.sapi.CreateInstance(ctx, again)
	require.NoError(t, err, "SAPI does not refuse a duplicate UUID")
	got2, err := e.sapi.GetInstance(ctx, insts[1].UUID)
	require.NoError(t, err)
	assert.Equal(t, insts[1].Params.ImageUUID, got2.Params.ImageUUID, "the second create replaced the first")
	after, err := e.sapi.ListInstances(ctx, vm.UUID)
	require.NoError(t, err)
	assert.Len(t, after, len(insts), "one instance under that UUID")
	bad := req
	bad.UUID, bad.Params.ServerUUID = uuid.Nil, uuid.New()
	_, err = e.sapi.CreateInstance(ctx, bad)
	assert.True(t, triton.HasCode(err, triton.CodeInvalidArgument), err)

	// An older agent's instance names no server; an update gives it one.
	old := req
	old.UUID, old.Params.ServerUUID = uuid.New(), uuid.Nil
	made, err := e.sapi.CreateInstance(ctx, old)
	require.NoError(t, err)
	assert.Equal(t, uuid.Nil, made.Params.ServerUUID)
	moved, err := e.sapi.SetInstanceImage(ctx, made.UUID, d.Servers[1].UUID, im.UUID)
	require.NoError(t, err)
	assert.Equal(t, d.Servers[1].UUID, moved.Params.ServerUUID)
	require.NoError(t, e.sapi.DeleteInstance(ctx, made.UUID))

	// Deleting a server leaves its SAPI agent instances behind, as the
	// real CNAPI does; the truth lists them as orphans.
	gone := d.Servers[2].UUID
	require.NoError(t, e.cnapi.DeleteServer(ctx, gone))
	all, err := e.sapi.ListInstances(ctx, uuid.Nil)
	require.NoError(t, err)
	left := 0
	for _, in := range all {
		if in.Params.ServerUUID == gone {
			left++
		}
	}
	assert.Equal(t, len(d.Servers[2].Agents), left)
	assert.Len(t, e.truth(t, uuid.Nil).Orphans, left)
	_, err = e.cnapi.GetServer(ctx, gone)
	assert.True(t, triton.IsNotFound(err))
}

func TestIMGAPIManifestAndFile(t *testing.T) {
	d := small()
	vm := newImage(t, d, "vm-agent")
	corrupt := vm
	corrupt.UUID, corrupt.Version, corrupt.SHA1 = uuid.New(), "9", strings.Repeat("a", 40)
	long := vm
	long.UUID, long.Version, long.FileSize = uuid.New(), "10", vm.Size+10
	d.Images = append(d.Images, corrupt, long)
	e := start(t, d)
	ctx := context.Background()

	m, err := e.imgapi.GetImage(ctx, vm.UUID)
	require.NoError(t, err)
	assert.Equal(t, "vm-agent", m.Name)
	assert.Equal(t, spec.GeneratedNewVersion, m.Version)
	assert.True(t, m.IsAgent())
	// Shaped as the agents' manifest.tmpl builds it.
	assert.Equal(t, "true", m.Tags[triton.TagSmartDCService])
	assert.Equal(t, "master-20240601T120000Z-g5d6e7f8", m.Buildstamp())
	assert.Equal(t, triton.ImageTypeOther, m.Type)
	assert.Equal(t, "other", m.OS)
	assert.Equal(t, uuid.Nil, m.Owner)
	require.NotNil(t, m.PublishedAt)
	require.Len(t, m.Files, 1)
	assert.Equal(t, vm.Size, m.Files[0].Size)
	assert.Len(t, m.Files[0].SHA1, 40)
	require.NoError(t, e.imgapi.VerifyFile(ctx, m))

	for _, id := range []uuid.UUID{corrupt.UUID, long.UUID} {
		m, err := e.imgapi.GetImage(ctx, id)
		require.NoError(t, err)
		err = e.imgapi.VerifyFile(ctx, m)
		var mm *triton.FileMismatchError
		assert.ErrorAs(t, err, &mm)
	}
	list, err := e.imgapi.ListImages(ctx, "vm-agent")
	require.NoError(t, err)
	assert.Len(t, list, 4)
	// Spec order is publish order: the new generated image is published
	// after the old one, the two appended after both.
	newest, ok := triton.Newest(list)
	require.True(t, ok)
	assert.Equal(t, long.UUID, newest.UUID)
}

func TestAPIFaultsLatencyAndErrorRate(t *testing.T) {
	d := small()
	e := start(t, d)
	ctx := context.Background()
	lid := e.arm(t, faults.Fault{Kind: faults.Latency, Target: "api/cnapi", Latency: "150ms"})
	t0 := time.Now()
	_, err := e.cnapi.GetServer(ctx, d.Servers[0].UUID)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(t0), 150*time.Millisecond)
	e.clearFault(t, lid)

	e.arm(t, faults.Fault{Kind: faults.ErrorRate, Target: "api/sapi", Rate: 1})
	_, err = e.sapi.ListServices(ctx, triton.ListServicesOptions{})
	require.Error(t, err)
	assert.True(t, triton.IsRetryable(err))
	assert.Equal(t, "ServiceUnavailable", triton.ErrorCode(err))
	_, err = e.imgapi.GetImage(ctx, d.Images[0].UUID)
	assert.NoError(t, err, "the error rate is per API")
}
