package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/dc"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// agentStack is one test's datacenter, ledger, Temporal and workers.
type agentStack struct {
	env *testenv.Env
	sim *fleetsim.Server
	dc  spec.Datacenter
	dep workerapp.Deps
}

func newAgentStack(t *testing.T, d spec.Datacenter, speedUp float64) *agentStack {
	t.Helper()
	env := testenv.New(t)
	sp := &spec.Spec{Seed: 3, SpeedUp: speedUp, Timings: spec.DefaultTimings(), Datacenter: d}
	require.NoError(t, sp.Validate())
	sim := env.StartFleetsim(sp)
	return &agentStack{env: env, sim: sim, dc: d, dep: workerapp.Deps{Fleet: env.Endpoints(sim),
		AgentReportWait: testReportWait, AgentSelfUpdateWait: testSelfUpdateWait}}
}

func (s *agentStack) worker() (stop func()) { return s.env.StartWorker(s.dep) }

func (s *agentStack) arm(t *testing.T, f faults.Fault) {
	t.Helper()
	_, err := s.sim.Env.Faults.Arm(f)
	require.NoError(t, err)
}

func (s *agentStack) truth(t *testing.T) dc.Truth {
	t.Helper()
	resp, err := http.Get(s.sim.URL + "/truth/dc")
	require.NoError(t, err)
	defer resp.Body.Close()
	var tr dc.Truth
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tr))
	return tr
}

func (s *agentStack) start(t *testing.T, ctx context.Context, in agents.AgentInstallInput) client.WorkflowRun {
	t.Helper()
	run, err := s.env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.WorkflowID(workflows.KindAgentInstall, in.Target()), TaskQueue: s.env.TaskQueue,
		// A run of the same ID still open is another test's: say so, not wait on it.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes:                    workflows.StartAttributes(workflows.KindAgentInstall, in.Target(), in.ArtifactVersion()),
	}, agents.AgentInstall, in)
	require.NoError(t, err)
	return run
}

func agentOf(as []triton.Agent, name string) (triton.Agent, bool) {
	for _, a := range as {
		if a.Name == name {
			return a, true
		}
	}
	return triton.Agent{}, false
}

// checkAgreement: for every server the summary calls successful, the truth,
// CNAPI's record and SAPI's instance agree on the image; for every other
// server, SAPI's intent still names the old image (never ahead of actual);
// and each server saw at most one successful install.
func checkAgreement(t *testing.T, tr dc.Truth, agent string, image uuid.UUID, ok map[uuid.UUID]bool) {
	t.Helper()
	completes := map[uuid.UUID]int{}
	for _, rec := range tr.Installs {
		if rec.Outcome == triton.TaskComplete {
			completes[rec.ServerUUID]++
		}
	}
	for _, s := range tr.Servers {
		actual, _ := agentOf(s.Agents, agent)
		record, _ := agentOf(s.Record, agent)
		var intent []uuid.UUID
		for _, in := range s.Instances {
			if in.Service == agent {
				intent = append(intent, in.ImageUUID)
			}
		}
		assert.LessOrEqual(t, completes[s.UUID], 1, "%s installed more than once", s.Hostname)
		if ok[s.UUID] {
			assert.Equal(t, image, actual.ImageUUID, "%s actual", s.Hostname)
			assert.Equal(t, image, record.ImageUUID, "%s CNAPI record", s.Hostname)
			assert.Equal(t, []uuid.UUID{image}, intent, "%s SAPI intent", s.Hostname)
			assert.Equal(t, actual.UUID, record.UUID, "%s agent uuid", s.Hostname)
			continue
		}
		for _, i := range intent {
			if i == image {
				assert.Equal(t, image, actual.ImageUUID, "%s: SAPI intent ahead of the actual state", s.Hostname)
			}
		}
	}
}

func succeeded(t *testing.T, store *ledger.Store, rollout uuid.UUID) map[uuid.UUID]bool {
	t.Helper()
	rows, err := store.AgentServers(context.Background(), rollout, ledger.AgentServerDone, 0)
	require.NoError(t, err)
	out := map[uuid.UUID]bool{}
	for _, r := range rows {
		out[r.ServerUUID] = true
	}
	return out
}

// Offline, not set up and failing servers: skipped ones are never touched,
// failed ones keep their old intent, the rest agree everywhere.
func TestAgentInstallOnFleetsimWithOfflineAndFailingServers(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	d := spec.GenerateDatacenter(24, 21)
	no := false
	d.Servers[3].Status = spec.ServerUnknown
	d.Servers[4].Setup = &no
	// cn-agent's post of its agents fails: the task completes, CNAPI shows
	// the old image, and the install is not recorded.
	d.Servers[7].StaleRefresh = true
	s := newAgentStack(t, d, 1000)
	s.arm(t, faults.Fault{Kind: faults.TaskFailure, Target: "server/" + d.Servers[5].UUID.String(), Times: 1})
	s.arm(t, faults.Fault{Kind: faults.TaskFailure, Target: "server/" + d.Servers[6].UUID.String(), Times: 1})
	s.arm(t, faults.Fault{Kind: faults.ErrorRate, Target: "api/sapi", Rate: 0.1})
	s.worker()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	img, _ := d.ImageFor("vm-agent", spec.GeneratedNewVersion)

	run := s.start(t, ctx, agents.AgentInstallInput{
		Agents:    []agents.AgentRequest{{Name: "vm-agent", ImageUUID: img.UUID}},
		Selection: agents.ServerSelection{All: true}, ExcludeServers: []string{d.Servers[9].Hostname},
		Concurrency: 8, MaxFailures: 3, PollInterval: time.Second,
	})
	var res agents.AgentInstallResult
	require.NoError(t, run.Get(ctx, &res))
	assert.Equal(t, agents.AgentRolloutWithFailures, res.Outcome)
	assert.Equal(t, 23, res.Selected)
	assert.Equal(t, 1, res.Excluded)
	assert.Equal(t, 2, res.Skipped)
	assert.Equal(t, 3, res.Failed)
	assert.Equal(t, 18, res.Installed)
	assert.False(t, res.ServiceImageSet)

	tr := s.truth(t)
	ok := succeeded(t, s.env.Store, res.RolloutID)
	assert.Len(t, ok, 18)
	assert.False(t, ok[d.Servers[7].UUID], "a task CNAPI's agent list does not confirm is not an install")
	checkAgreement(t, tr, "vm-agent", img.UUID, ok)
	touched := map[uuid.UUID]bool{}
	for _, rec := range tr.Installs {
		touched[rec.ServerUUID] = true
	}
	for _, i := range []int{3, 4, 9} {
		assert.False(t, touched[d.Servers[i].UUID], "%s must not be touched", d.Servers[i].Hostname)
	}
	// The ledger holds one ended attempt per touched server, with events.
	atts, err := s.env.Store.List(ctx, ledger.ListFilter{Kind: string(workflows.KindAgentInstall), Target: agents.ServerTarget(d.Servers[5].UUID)})
	require.NoError(t, err)
	require.Len(t, atts, 1)
	assert.Equal(t, ledger.StateFailed, atts[0].State)
	assert.Contains(t, atts[0].Error, "task_failure")

	stale := d.Servers[7]
	atts, err = s.env.Store.List(ctx, ledger.ListFilter{Kind: string(workflows.KindAgentInstall), Target: agents.ServerTarget(stale.UUID)})
	require.NoError(t, err)
	require.Len(t, atts, 1)
	assert.Equal(t, ledger.StateFailed, atts[0].State)
	assert.Contains(t, atts[0].Error, "server.agents shows vm-agent@"+spec.GeneratedOldVersion)
	for _, srv := range tr.Servers {
		if srv.UUID != stale.UUID {
			continue
		}
		record, _ := agentOf(srv.Record, "vm-agent")
		assert.NotEqual(t, img.UUID, record.ImageUUID, "fleetsaga wrote nothing into server.agents")
		for _, in := range srv.Instances {
			if in.Service == "vm-agent" {
				assert.NotEqual(t, img.UUID, in.ImageUUID, "the SAPI intent stays at the image CNAPI shows")
			}
		}
	}
}

// A worker dies mid-rollout; another takes over; every server ends at the
// image and none was installed twice.
func TestAgentInstallSurvivesWorkerKilledMidRollout(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	d := spec.GenerateDatacenter(30, 22)
	for i := range d.Servers {
		d.Servers[i].InstallSlowness = 10 // 450 ms per install
	}
	s := newAgentStack(t, d, 1000)
	stop1 := s.worker()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	img, _ := d.ImageFor("net-agent", spec.GeneratedNewVersion)
	in := agents.AgentInstallInput{Agents: []agents.AgentRequest{{Name: "net-agent"}},
		Selection: agents.ServerSelection{All: true}, Concurrency: 5, PollInterval: time.Second}
	run := s.start(t, ctx, in)
	require.Eventually(t, func() bool { return len(s.truth(t).Installs) >= 8 }, time.Minute, 100*time.Millisecond)
	stop1()
	s.worker()

	var res agents.AgentInstallResult
	require.NoError(t, run.Get(ctx, &res))
	assert.Equal(t, agents.AgentRolloutCompleted, res.Outcome)
	assert.Equal(t, 30, res.Installed+res.Verified)
	assert.True(t, res.ServiceImageSet)
	tr := s.truth(t)
	ok := succeeded(t, s.env.Store, res.RolloutID)
	assert.Len(t, ok, 30)
	checkAgreement(t, tr, "net-agent", img.UUID, ok)
	svcs, err := triton.NewSAPI(s.sim.URL + "/sapi")
	require.NoError(t, err)
	list, err := svcs.ListServices(ctx, triton.ListServicesOptions{Name: "net-agent"})
	require.NoError(t, err)
	assert.Equal(t, img.UUID, list[0].Params.ImageUUID, "fleet-wide intent moved once every server ran it")
}

// Drift: make three kinds of drift, check reports them, repair fixes them.
func TestAgentDriftCheckAndRepairOnFleetsim(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	d := spec.GenerateDatacenter(8, 23)
	s := newAgentStack(t, d, 1000)
	s.worker()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sapi, err := triton.NewSAPI(s.sim.URL + "/sapi")
	require.NoError(t, err)
	img, _ := d.ImageFor("vm-agent", spec.GeneratedNewVersion)
	_, err = sapi.SetInstanceImage(ctx, d.Servers[0].Agents[3].UUID, d.Servers[0].UUID, img.UUID) // intent ahead
	require.NoError(t, err)
	require.NoError(t, sapi.DeleteInstance(ctx, d.Servers[1].Agents[3].UUID)) // missing instance

	in := agents.AgentDriftInput{Agents: []string{"vm-agent"}, Selection: agents.ServerSelection{All: true}}
	check := func(in agents.AgentDriftInput) agents.AgentDriftResult {
		run, err := s.env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: workflows.WorkflowID(workflows.KindAgentDrift, in.Target()) + fmt.Sprint(in.Repair), TaskQueue: s.env.TaskQueue,
		}, agents.AgentDriftCheck, in)
		require.NoError(t, err)
		var res agents.AgentDriftResult
		require.NoError(t, run.Get(ctx, &res))
		return res
	}
	res := check(in)
	assert.Equal(t, map[string]int{agents.DriftMismatch: 1, agents.DriftMissingInstance: 1}, res.Found.Counts)
	assert.Contains(t, res.Outcome, "not repaired")

	in.Repair, in.PollInterval = true, time.Second
	res = check(in)
	assert.Equal(t, 1, res.IntentsFixed)
	require.Len(t, res.Installs, 1)
	assert.Equal(t, 1, res.Installs[0].Installed, res.Installs[0])
	require.NotNil(t, res.Remaining)
	assert.Empty(t, res.Remaining.Counts)
	tr := s.truth(t)
	a0, _ := agentOf(tr.Servers[0].Agents, "vm-agent")
	assert.Equal(t, img.UUID, a0.ImageUUID, "the server behind its intent got the intended image")
	var inst1 []dc.InstanceTruth
	for _, i := range tr.Servers[1].Instances {
		if i.Service == "vm-agent" {
			inst1 = append(inst1, i)
		}
	}
	require.Len(t, inst1, 1)
	assert.Equal(t, d.Servers[1].Agents[3].UUID, inst1[0].UUID, "the recreated instance keeps the agent's UUID")
}

// A deleted server's SAPI instances (CNAPI leaves them) are found by the
// drift check and removed by its repair; an unreachable server's stay.
func TestAgentDriftRemovesOrphansOfDeletedServer(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	d := spec.GenerateDatacenter(4, 29)
	d.Servers[1].Status = spec.ServerUnknown
	s := newAgentStack(t, d, 1000)
	s.worker()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cnapi, err := triton.NewCNAPI(s.sim.URL + "/cnapi")
	require.NoError(t, err)
	require.NoError(t, cnapi.DeleteServer(ctx, d.Servers[0].UUID))
	require.Len(t, s.truth(t).Orphans, len(d.Servers[0].Agents))

	check := func(repair bool) agents.AgentDriftResult {
		in := agents.AgentDriftInput{Selection: agents.ServerSelection{All: true}, Repair: repair, PollInterval: time.Second}
		run, err := s.env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: workflows.WorkflowID(workflows.KindAgentDrift, in.Target()) + fmt.Sprint(repair), TaskQueue: s.env.TaskQueue,
		}, agents.AgentDriftCheck, in)
		require.NoError(t, err)
		var res agents.AgentDriftResult
		require.NoError(t, run.Get(ctx, &res))
		return res
	}
	res := check(false)
	assert.Equal(t, len(d.Servers[0].Agents), res.Found.Counts[agents.DriftOrphanInstance])
	res = check(true)
	assert.Equal(t, len(d.Servers[0].Agents), res.OrphansRemoved)
	require.NotNil(t, res.Remaining)
	assert.Zero(t, res.Remaining.Counts[agents.DriftOrphanInstance])
	tr := s.truth(t)
	assert.Empty(t, tr.Orphans)
	require.Equal(t, d.Servers[1].UUID, tr.Servers[0].UUID)
	assert.Len(t, tr.Servers[0].Instances, len(d.Servers[1].Agents), "the unreachable server keeps its instances")
}

// 1,000 servers in one rollout, continuing as new along the way.
func TestAgentInstallThousandServers(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: 1,000 servers")
	}
	d := spec.GenerateDatacenter(1000, 24)
	s := newAgentStack(t, d, 2000)
	s.dep.HTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
	s.worker()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	img, _ := d.ImageFor("cmon-agent", spec.GeneratedNewVersion)
	start := time.Now()
	run := s.start(t, ctx, agents.AgentInstallInput{Agents: []agents.AgentRequest{{Name: "cmon-agent", ImageUUID: img.UUID}},
		Selection: agents.ServerSelection{All: true}, Concurrency: 50, PollInterval: time.Second, ChildrenPerRun: 400})
	var res agents.AgentInstallResult
	require.NoError(t, run.Get(ctx, &res))
	t.Logf("1,000 servers in %s over %d runs", time.Since(start).Round(time.Second), res.Runs)
	assert.Equal(t, 1000, res.Installed)
	assert.GreaterOrEqual(t, res.Runs, 3, "continued as new")
	checkAgreement(t, s.truth(t), "cmon-agent", img.UUID, succeeded(t, s.env.Store, res.RolloutID))
}

// All agents, from images shaped as the agents' manifest.tmpl (cn-agent
// updating itself): marlin untouched unless named, excluded agents
// untouched, core agents installed first, one at a time.
func TestAgentInstallAllAgentsOnFleetsim(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	d := spec.GenerateDatacenter(4, 25)
	s := newAgentStack(t, d, 1000)
	s.worker()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := s.start(t, ctx, agents.AgentInstallInput{AllAgents: true, ExcludeAgents: []string{"smartlogin"},
		Selection: agents.ServerSelection{All: true}, PollInterval: time.Second})
	var res agents.AgentInstallResult
	require.NoError(t, run.Get(ctx, &res))
	assert.Equal(t, 4, res.Installed)
	var names []string
	for _, ag := range res.Agents {
		names = append(names, ag.Name)
	}
	assert.Equal(t, []string{"agents_core", "config-agent", "cn-agent", "amon-agent", "cmon-agent", "firewaller", "net-agent", "vm-agent"}, names)

	tr := s.truth(t)
	for _, srv := range tr.Servers {
		var order []string
		for _, rec := range tr.Installs {
			if rec.ServerUUID == srv.UUID {
				order = append(order, rec.Agent)
				assert.Equal(t, triton.TaskComplete, rec.Outcome)
			}
		}
		assert.Equal(t, names, order, "%s: core agents first, one task at a time", srv.Hostname)
		for i := 1; i < len(tr.Installs); i++ {
			a, b := tr.Installs[i-1], tr.Installs[i]
			if a.ServerUUID == srv.UUID && b.ServerUUID == srv.UUID {
				assert.False(t, b.Started.Before(a.Finished), "%s: tasks overlap", srv.Hostname)
			}
		}
		for _, ag := range srv.Agents {
			rec, _ := agentOf(srv.Record, ag.Name)
			assert.Equal(t, ag, rec, "%s %s: CNAPI's agent list matches the server's", srv.Hostname, ag.Name)
			switch ag.Name {
			case spec.GeneratedMarlin, "smartlogin":
				assert.Equal(t, spec.GeneratedOldVersion, ag.Version, "%s %s must not be touched", srv.Hostname, ag.Name)
			default:
				assert.Equal(t, spec.GeneratedNewVersion, ag.Version, "%s %s", srv.Hostname, ag.Name)
			}
		}
	}
}

// Validation happens before anything changes.
func TestAgentInstallValidatesBeforeTouching(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	d := spec.GenerateDatacenter(3, 26)
	vm, _ := d.ImageFor("vm-agent", spec.GeneratedNewVersion)
	corrupt := vm
	corrupt.UUID, corrupt.Version, corrupt.SHA1 = uuid.New(), "1.2.0", "0000000000000000000000000000000000000000"
	d.Images = append(d.Images, corrupt)
	s := newAgentStack(t, d, 1000)
	s.worker()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i, c := range []struct {
		in   agents.AgentInstallInput
		want string
	}{
		{agents.AgentInstallInput{Agents: []agents.AgentRequest{{Name: "vm-agent", ImageUUID: vm.UUID}},
			Selection: agents.ServerSelection{Servers: []string{d.Servers[0].Hostname, "cn-typo"}}}, "unknown servers (not in CNAPI): cn-typo"},
		{agents.AgentInstallInput{Agents: []agents.AgentRequest{{Name: "net-agent", ImageUUID: vm.UUID}},
			Selection: agents.ServerSelection{All: true}}, "is vm-agent, not net-agent"},
		{agents.AgentInstallInput{Agents: []agents.AgentRequest{{Name: "vm-agent", ImageUUID: corrupt.UUID}},
			Selection: agents.ServerSelection{All: true}}, "sha1: manifest says"},
		{agents.AgentInstallInput{Agents: []agents.AgentRequest{{Name: "vm-agent", ImageUUID: uuid.New()}},
			Selection: agents.ServerSelection{All: true}}, "not found in IMGAPI"},
		{agents.AgentInstallInput{Agents: []agents.AgentRequest{{Name: "no-such-agent"}},
			Selection: agents.ServerSelection{All: true}}, `no SAPI agent service named "no-such-agent"`},
	} {
		run := s.start(t, ctx, c.in)
		err := run.Get(ctx, nil)
		require.Error(t, err, "case %d", i)
		assert.Contains(t, err.Error(), c.want, "case %d", i)
	}
	assert.Empty(t, s.truth(t).Installs, "nothing was touched")
}
