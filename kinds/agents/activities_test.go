package agents_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/domain"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
)

func servers(names ...string) []triton.Server {
	out := make([]triton.Server, len(names))
	for i, n := range names {
		out[i] = triton.Server{UUID: uuid.NewSHA1(uuid.NameSpaceDNS, []byte(n)), Hostname: n, Status: triton.StatusRunning, Setup: true,
			Traits: map[string]any{"rack": map[bool]string{true: "r1", false: "r2"}[i%2 == 0]}}
	}
	return out
}

func hosts(ss []triton.Server) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Hostname
	}
	return out
}

func TestSelectServers(t *testing.T) {
	all := servers("cn0", "cn1", "cn2", "cn3", "cn4")
	cases := []struct {
		name     string
		sel      agents.ServerSelection
		exclude  []string
		want     []string
		excluded int
		err      string
	}{
		{name: "all", sel: agents.ServerSelection{All: true}, want: []string{"cn0", "cn1", "cn2", "cn3", "cn4"}},
		{name: "all minus excluded by name and uuid", sel: agents.ServerSelection{All: true},
			exclude: []string{"cn1", all[3].UUID.String()}, want: []string{"cn0", "cn2", "cn4"}, excluded: 2},
		{name: "list keeps its order and dedupes", sel: agents.ServerSelection{Servers: []string{"cn3", all[0].UUID.String(), "cn3"}},
			want: []string{"cn3", "cn0"}},
		{name: "traits", sel: agents.ServerSelection{Traits: map[string]string{"rack": "r1"}}, want: []string{"cn0", "cn2", "cn4"}},
		{name: "traits minus excluded", sel: agents.ServerSelection{Traits: map[string]string{"rack": "r1"}}, exclude: []string{"cn2"},
			want: []string{"cn0", "cn4"}, excluded: 1},
		{name: "unknown listed server fails everything", sel: agents.ServerSelection{Servers: []string{"cn1", "cn9", uuid.NewString()}},
			err: "unknown servers"},
		{name: "unknown exclusion fails too", sel: agents.ServerSelection{All: true}, exclude: []string{"cn-typo"}, err: "cn-typo"},
		{name: "no selection", sel: agents.ServerSelection{}, err: "exactly one"},
		{name: "two selections", sel: agents.ServerSelection{All: true, Servers: []string{"cn1"}}, err: "exactly one"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, excluded, err := agents.SelectServers(all, c.sel, c.exclude)
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, hosts(got))
			assert.Equal(t, c.excluded, excluded)
		})
	}
}

func TestSkipReasonOrderAgents(t *testing.T) {
	assert.Empty(t, agents.SkipReason(triton.Server{Status: "running", Setup: true}))
	assert.Contains(t, agents.SkipReason(triton.Server{Status: "unknown", Setup: true}), "offline")
	assert.Equal(t, "not set up", agents.SkipReason(triton.Server{Status: "running"}))

	in := []agents.PlannedAgent{{Name: "vm-agent"}, {Name: "cn-agent"}, {Name: "amon-agent"}, {Name: "agents_core"}, {Name: "config-agent"}}
	var names []string
	for _, a := range agents.OrderAgents(in) {
		names = append(names, a.Name)
	}
	assert.Equal(t, []string{"agents_core", "config-agent", "cn-agent", "amon-agent", "vm-agent"}, names)
	assert.True(t, agents.IsCoreAgent("cn-agent"))
	assert.False(t, agents.IsCoreAgent("vm-agent"))
}

// The tests' waits for a server to show its image (the product's are
// minutes): long enough for fleetsim at speed-up 1000.
const (
	testReportWait     = 300 * time.Millisecond
	testSelfUpdateWait = 3 * time.Second
)

// simEnv runs a fleetsim datacenter and agent activities against it.
type simEnv struct {
	dc   spec.Datacenter
	url  string
	acts *agents.AgentActivities
	act  *testsuite.TestActivityEnvironment
	sim  *fleetsim.Server
}

func newSim(t *testing.T, d spec.Datacenter) *simEnv {
	t.Helper()
	sp := &spec.Spec{Seed: 1, SpeedUp: 1000, Timings: spec.DefaultTimings(), Datacenter: d}
	srv, err := fleetsim.Start(context.Background(), domain.Env{Spec: sp}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	acts, err := agents.NewAgentActivities(fleet.FromFleetsim(srv.URL, ""), nil, nil, "test")
	require.NoError(t, err)
	acts.ReportWait, acts.SelfUpdateWait = testReportWait, testSelfUpdateWait
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	return &simEnv{dc: d, url: srv.URL, acts: acts, act: env, sim: srv}
}

func planned(t *testing.T, d spec.Datacenter, name string) agents.PlannedAgent {
	im, ok := d.ImageFor(name, spec.GeneratedNewVersion)
	require.True(t, ok)
	for _, s := range d.Services {
		if s.Name == name {
			return agents.PlannedAgent{Name: name, ImageUUID: im.UUID, Version: im.Version, ServiceUUID: s.UUID}
		}
	}
	t.Fatalf("no service %s", name)
	return agents.PlannedAgent{}
}

func errType(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Type()
	}
	return ""
}

func isNonRetryable(err error) bool {
	var ae *temporal.ApplicationError
	return errors.As(err, &ae) && ae.NonRetryable()
}

func TestInstallAgentImageAgainstFleetsim(t *testing.T) {
	d := spec.GenerateDatacenter(3, 2)
	d.Servers[2].Status = spec.ServerUnknown
	e := newSim(t, d)
	vm := planned(t, d, "vm-agent")
	req := agents.InstallAgentRequest{Server: d.Servers[0].UUID, Agent: vm}

	v, err := e.act.ExecuteActivity(e.acts.InstallAgentImage, req)
	require.NoError(t, err)
	var res agents.InstallAgentResult
	require.NoError(t, v.Get(&res))
	assert.NotEmpty(t, res.TaskID)
	assert.False(t, res.AlreadyInstalled)

	// A retry after the task finished installs nothing.
	v, err = e.act.ExecuteActivity(e.acts.InstallAgentImage, req)
	require.NoError(t, err)
	require.NoError(t, v.Get(&res))
	assert.True(t, res.AlreadyInstalled)

	_, err = e.act.ExecuteActivity(e.acts.InstallAgentImage, agents.InstallAgentRequest{Server: d.Servers[2].UUID, Agent: vm})
	assert.Equal(t, failure.ServerNotRunning, errType(err), err)

	bad := vm
	bad.Name = "net-agent" // the image is vm-agent: cn-agent's task refuses it
	_, err = e.act.ExecuteActivity(e.acts.InstallAgentImage, agents.InstallAgentRequest{Server: d.Servers[1].UUID, Agent: bad})
	assert.Equal(t, failure.AgentTaskFailed, errType(err), err)
}

func TestIntentAgainstFleetsim(t *testing.T) {
	d := spec.GenerateDatacenter(3, 4)
	e := newSim(t, d)
	ctx := context.Background()
	vm := planned(t, d, "vm-agent")
	srv := d.Servers[0].UUID

	_, err := e.act.ExecuteActivity(e.acts.InstallAgentImage, agents.InstallAgentRequest{Server: srv, Agent: vm})
	require.NoError(t, err)
	v, err := e.act.ExecuteActivity(e.acts.ConfirmServerAgent, agents.RefreshAgentRequest{Server: srv, Agent: vm})
	require.NoError(t, err)
	var entry triton.Agent
	require.NoError(t, v.Get(&entry))
	assert.Equal(t, vm.ImageUUID, entry.ImageUUID)
	assert.Equal(t, d.Servers[0].Agents[3].UUID, entry.UUID, "the agent keeps its instance UUID")

	// Intent: the existing instance (same UUID as the agent) is updated.
	v, err = e.act.ExecuteActivity(e.acts.SetAgentIntent, agents.SetAgentIntentRequest{Server: srv, Agent: vm, InstanceUUID: entry.UUID})
	require.NoError(t, err)
	var ir agents.SetAgentIntentResult
	require.NoError(t, v.Get(&ir))
	assert.Equal(t, agents.SetAgentIntentResult{InstanceUUID: entry.UUID, Changed: true}, ir)
	v, err = e.act.ExecuteActivity(e.acts.SetAgentIntent, agents.SetAgentIntentRequest{Server: srv, Agent: vm, InstanceUUID: entry.UUID})
	require.NoError(t, err)
	ir = agents.SetAgentIntentResult{}
	require.NoError(t, v.Get(&ir))
	assert.False(t, ir.Changed, "idempotent")

	// A missing instance is created with the agent's UUID, once.
	srv1 := d.Servers[1]
	agent1 := srv1.Agents[3]
	require.Equal(t, "vm-agent", agent1.Name)
	require.NoError(t, e.acts.SAPI.DeleteInstance(ctx, agent1.UUID))
	for i := range 2 {
		v, err = e.act.ExecuteActivity(e.acts.SetAgentIntent, agents.SetAgentIntentRequest{Server: srv1.UUID, Agent: vm, InstanceUUID: agent1.UUID})
		require.NoError(t, err)
		ir = agents.SetAgentIntentResult{}
		require.NoError(t, v.Get(&ir))
		assert.Equal(t, agent1.UUID, ir.InstanceUUID)
		assert.Equal(t, i == 0, ir.Created)
	}
	insts, err := e.acts.SAPI.ListInstances(ctx, vm.ServiceUUID)
	require.NoError(t, err)
	n := 0
	for _, in := range insts {
		if in.Params.ServerUUID == srv1.UUID {
			n++
			assert.Equal(t, vm.ImageUUID, in.Params.ImageUUID)
		}
	}
	assert.Equal(t, 1, n)

	// An instance UUID that belongs to another agent is not touched.
	other := d.Servers[2].Agents[4] // net-agent on server 2
	v, err = e.act.ExecuteActivity(e.acts.SetAgentIntent, agents.SetAgentIntentRequest{Server: d.Servers[2].UUID, Agent: vm, InstanceUUID: other.UUID})
	require.NoError(t, err)
	require.NoError(t, v.Get(&ir))
	assert.Equal(t, d.Servers[2].Agents[3].UUID, ir.InstanceUUID)
	netInst, err := e.acts.SAPI.GetInstance(ctx, other.UUID)
	require.NoError(t, err)
	assert.Equal(t, other.ImageUUID, netInst.Params.ImageUUID)
}

func TestFindAgentDriftAgainstFleetsim(t *testing.T) {
	d := spec.GenerateDatacenter(6, 9)
	d.Servers[5].Status = spec.ServerUnknown
	e := newSim(t, d)
	ctx := context.Background()
	vm := planned(t, d, "vm-agent")
	vmOld := d.Servers[0].Agents[3]
	require.Equal(t, "vm-agent", vmOld.Name)

	// 0: intent moved ahead of actual (install needed).
	_, err := e.acts.SAPI.SetInstanceImage(ctx, d.Servers[0].Agents[3].UUID, d.Servers[0].UUID, vm.ImageUUID)
	require.NoError(t, err)
	// 1: actual moved (new image is the service's target), intent did not.
	_, err = e.act.ExecuteActivity(e.acts.InstallAgentImage, agents.InstallAgentRequest{Server: d.Servers[1].UUID, Agent: vm})
	require.NoError(t, err)
	_, err = e.acts.SAPI.SetServiceImage(ctx, vm.ServiceUUID, vm.ImageUUID)
	require.NoError(t, err)
	// 2: instance missing.
	require.NoError(t, e.acts.SAPI.DeleteInstance(ctx, d.Servers[2].Agents[3].UUID))
	// 3: duplicate instance.
	_, err = e.acts.SAPI.CreateInstance(ctx, triton.CreateInstanceRequest{ServiceUUID: vm.ServiceUUID,
		Params: triton.InstanceParams{ServerUUID: d.Servers[3].UUID, ImageUUID: vmOld.ImageUUID}})
	require.NoError(t, err)

	v, err := e.act.ExecuteActivity(e.acts.FindAgentDrift, agents.FindAgentDriftRequest{Agents: []string{"vm-agent"},
		Selection: agents.ServerSelection{All: true}})
	require.NoError(t, err)
	var rep agents.AgentDriftReport
	require.NoError(t, v.Get(&rep))
	assert.Equal(t, 5, rep.Checked)
	assert.Equal(t, 1, rep.Unreachable)
	got := map[string][2]string{}
	for _, dr := range rep.Drift {
		got[dr.Hostname] = [2]string{dr.Kind, dr.Repair}
	}
	assert.Equal(t, map[string][2]string{
		"cn00000": {agents.DriftMismatch, agents.RepairInstall},
		"cn00001": {agents.DriftMismatch, agents.RepairIntent},
		"cn00002": {agents.DriftMissingInstance, agents.RepairIntent},
		"cn00003": {agents.DriftDuplicateInstance, agents.RepairManual},
	}, got)

	v, err = e.act.ExecuteActivity(e.acts.RepairAgentIntents, rep.Drift)
	require.NoError(t, err)
	var fixed int
	require.NoError(t, v.Get(&fixed))
	assert.Equal(t, 2, fixed)
	v, err = e.act.ExecuteActivity(e.acts.FindAgentDrift, agents.FindAgentDriftRequest{Agents: []string{"vm-agent"},
		Selection: agents.ServerSelection{All: true}})
	require.NoError(t, err)
	rep = agents.AgentDriftReport{}
	require.NoError(t, v.Get(&rep))
	assert.Equal(t, map[string]int{agents.DriftMismatch: 1, agents.DriftDuplicateInstance: 1}, rep.Counts)

	_, err = e.act.ExecuteActivity(e.acts.FindAgentDrift, agents.FindAgentDriftRequest{Agents: []string{"nope"},
		Selection: agents.ServerSelection{All: true}})
	assert.Equal(t, failure.InvalidAgentRequest, errType(err))
}

// A deleted server's SAPI instances outlive it (CNAPI does not remove
// them): the drift check finds them and the repair deletes them. A server
// that is only unreachable keeps its instances, and a transient CNAPI error
// removes nothing.
func TestOrphanedInstancesOfDeletedServerAreFoundAndRemoved(t *testing.T) {
	d := spec.GenerateDatacenter(4, 5)
	d.Servers[1].Status = spec.ServerUnknown
	e := newSim(t, d)
	ctx := context.Background()
	gone, offline := d.Servers[0], d.Servers[1]
	require.NoError(t, e.acts.CNAPI.DeleteServer(ctx, gone.UUID))

	instancesOn := func(server uuid.UUID) int {
		all, err := e.acts.SAPI.ListInstances(ctx, uuid.Nil)
		require.NoError(t, err)
		n := 0
		for _, in := range all {
			if in.Params.ServerUUID == server {
				n++
			}
		}
		return n
	}
	require.Equal(t, len(gone.Agents), instancesOn(gone.UUID), "CNAPI leaves a deleted server's SAPI instances behind")
	offlineBefore := instancesOn(offline.UUID)
	require.NotZero(t, offlineBefore)

	v, err := e.act.ExecuteActivity(e.acts.FindAgentDrift, agents.FindAgentDriftRequest{Selection: agents.ServerSelection{All: true}})
	require.NoError(t, err)
	var rep agents.AgentDriftReport
	require.NoError(t, v.Get(&rep))
	assert.Equal(t, len(gone.Agents), rep.Counts[agents.DriftOrphanInstance])
	for _, dr := range rep.Drift {
		assert.NotEqual(t, offline.UUID, dr.Server, "an unreachable server is not an orphan: %+v", dr)
		if dr.Kind == agents.DriftOrphanInstance {
			assert.Equal(t, gone.UUID, dr.Server)
			assert.Equal(t, agents.RepairDelete, dr.Repair)
		}
	}

	// A stale report naming the unreachable server removes nothing.
	stale := []agents.AgentDrift{{Server: offline.UUID, Agent: "vm-agent", Kind: agents.DriftOrphanInstance,
		Repair: agents.RepairDelete, Instances: []uuid.UUID{offline.Agents[3].UUID}}}
	v, err = e.act.ExecuteActivity(e.acts.RemoveOrphanInstances, stale)
	require.NoError(t, err)
	var removed int
	require.NoError(t, v.Get(&removed))
	assert.Zero(t, removed)
	assert.Equal(t, offlineBefore, instancesOn(offline.UUID))

	// CNAPI failing transiently: nothing is removed, the error is retryable.
	fid, err := e.sim.Env.Faults.Arm(faults.Fault{Kind: faults.ErrorRate, Target: "api/cnapi", Rate: 1})
	require.NoError(t, err)
	_, err = e.act.ExecuteActivity(e.acts.RemoveOrphanInstances, rep.Drift)
	require.Error(t, err)
	assert.False(t, isNonRetryable(err), err)
	assert.Equal(t, len(gone.Agents), instancesOn(gone.UUID))
	e.sim.Env.Faults.Clear(fid)

	v, err = e.act.ExecuteActivity(e.acts.RemoveOrphanInstances, rep.Drift)
	require.NoError(t, err)
	require.NoError(t, v.Get(&removed))
	assert.Equal(t, len(gone.Agents), removed)
	assert.Equal(t, 0, instancesOn(gone.UUID))
	assert.Equal(t, offlineBefore, instancesOn(offline.UUID), "the unreachable server keeps its instances")

	v, err = e.act.ExecuteActivity(e.acts.FindAgentDrift, agents.FindAgentDriftRequest{Selection: agents.ServerSelection{All: true}})
	require.NoError(t, err)
	rep = agents.AgentDriftReport{}
	require.NoError(t, v.Get(&rep))
	assert.Zero(t, rep.Counts[agents.DriftOrphanInstance])
}

// A task that reports success while the server's own agent list still
// shows the old image (cn-agent's post to CNAPI failed: staleRefresh) is
// not an install: AgentNotConfirmed, and fleetsaga writes nothing to
// server.agents, so a retry or the next run sees the truth CNAPI has.
func TestTaskSuccessWhileTheServerShowsTheOldImageIsNotInstalled(t *testing.T) {
	d := spec.GenerateDatacenter(2, 4)
	d.Servers[0].StaleRefresh = true
	e := newSim(t, d)
	ctx := context.Background()
	vm := planned(t, d, "vm-agent")
	srv := d.Servers[0]

	_, err := e.act.ExecuteActivity(e.acts.InstallAgentImage, agents.InstallAgentRequest{Server: srv.UUID, Agent: vm})
	assert.Equal(t, failure.AgentNotConfirmed, errType(err), err)
	assert.True(t, isNonRetryable(err))
	assert.Contains(t, err.Error(), "completed")
	_, err = e.act.ExecuteActivity(e.acts.RecordAgentOnServer, agents.RefreshAgentRequest{Server: srv.UUID, Agent: vm})
	assert.Equal(t, failure.AgentNotConfirmed, errType(err), err)

	s, err := e.acts.CNAPI.GetServer(ctx, srv.UUID)
	require.NoError(t, err)
	rec, _ := s.Agent("vm-agent")
	assert.Equal(t, srv.Agents[3].ImageUUID, rec.ImageUUID, "server.agents is the server's, never written from the plan")
	inst, err := e.acts.SAPI.GetInstance(ctx, srv.Agents[3].UUID)
	require.NoError(t, err)
	assert.Equal(t, srv.Agents[3].ImageUUID, inst.Params.ImageUUID, "the intent stays at the old image")
}

// RecordAgentOnServer after an install the server reported: the SAPI
// instance (the agent's own UUID) moves to the image, once.
func TestRecordAgentOnServerMovesTheIntentOfAReportedInstall(t *testing.T) {
	d := spec.GenerateDatacenter(2, 4)
	e := newSim(t, d)
	ctx := context.Background()
	vm := planned(t, d, "vm-agent")
	srv := d.Servers[0]
	_, err := e.act.ExecuteActivity(e.acts.InstallAgentImage, agents.InstallAgentRequest{Server: srv.UUID, Agent: vm})
	require.NoError(t, err)

	for i := range 2 {
		v, err := e.act.ExecuteActivity(e.acts.RecordAgentOnServer, agents.RefreshAgentRequest{Server: srv.UUID, Agent: vm})
		require.NoError(t, err)
		var ir agents.SetAgentIntentResult
		require.NoError(t, v.Get(&ir))
		assert.Equal(t, srv.Agents[3].UUID, ir.InstanceUUID, "the agent's own instance")
		assert.Equal(t, i == 0, ir.Changed, "a retry changes nothing more")
	}
	inst, err := e.acts.SAPI.GetInstance(ctx, srv.Agents[3].UUID)
	require.NoError(t, err)
	assert.Equal(t, vm.ImageUUID, inst.Params.ImageUUID, "SAPI's intent")
}
