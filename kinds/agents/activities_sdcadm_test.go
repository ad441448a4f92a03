package agents_test

// Cases of sdcadm's agent update (lib/procedures/update-agent-v1.js,
// lib/sdcadm.js, lib/cli/do_update_agents.js) on fleetsim; each has its row
// in docs/CONFORMANCE.md (§F).

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
)

// waitUntilAgentsChange: cn-agent's task never reports (the cn-agent that
// held it was replaced by cn-agent-update); the install is done when the
// server's agent list shows the new cn-agent.
func TestCNAgentWhoseTaskNeverReportsIsDoneWhenTheServerShowsIt(t *testing.T) {
	d := spec.GenerateDatacenter(2, 5)
	e := newSim(t, d)
	cn := planned(t, d, agents.CNAgent)
	srv := d.Servers[0].UUID

	v, err := e.act.ExecuteActivity(e.acts.InstallAgentImage, agents.InstallAgentRequest{Server: srv, Agent: cn, PollInterval: time.Second})
	require.NoError(t, err)
	var res agents.InstallAgentResult
	require.NoError(t, v.Get(&res))
	require.NotEmpty(t, res.TaskID)
	task, err := e.acts.CNAPI.GetTask(context.Background(), res.TaskID)
	require.NoError(t, err)
	assert.False(t, task.Done(), "CNAPI's task never reported")
	s, err := e.acts.CNAPI.GetServer(context.Background(), srv)
	require.NoError(t, err)
	got, _ := s.Agent(agents.CNAgent)
	assert.Equal(t, cn.ImageUUID, got.ImageUUID, "CNAPI's agent list, as the server posted it, matches")
	assert.Equal(t, cn.Version, got.Version)
}

// The other ends CNAPI may record for cn-agent's task (a request broken
// with the cn-agent that held it, or a completion): neither decides; the
// server's agent list does.
func TestCNAgentTaskOutcomeDoesNotDecide(t *testing.T) {
	for _, mode := range []string{spec.CNAgentTaskLost, spec.CNAgentTaskComplete} {
		t.Run(mode, func(t *testing.T) {
			d := spec.GenerateDatacenter(2, 5)
			d.Servers[0].CNAgentTask = mode
			e := newSim(t, d)
			cn := planned(t, d, agents.CNAgent)
			v, err := e.act.ExecuteActivity(e.acts.InstallAgentImage, agents.InstallAgentRequest{Server: d.Servers[0].UUID, Agent: cn, PollInterval: time.Second})
			require.NoError(t, err)
			var res agents.InstallAgentResult
			require.NoError(t, v.Get(&res))
			task, err := e.acts.CNAPI.GetTask(context.Background(), res.TaskID)
			require.NoError(t, err)
			assert.Equal(t, mode == spec.CNAgentTaskLost, task.Status == triton.TaskFailure, task.Status)
			_, err = e.act.ExecuteActivity(e.acts.ConfirmServerAgent, agents.RefreshAgentRequest{Server: d.Servers[0].UUID, Agent: cn})
			assert.NoError(t, err, "CNAPI's agent list shows the new cn-agent")
		})
	}
	// A cn-agent install that failed (cn-agent restored its backup) is
	// known only by the server never showing the new cn-agent; the error
	// names what CNAPI recorded for the task.
	d := spec.GenerateDatacenter(2, 5)
	e := newSim(t, d)
	_, err := e.sim.Env.Faults.Arm(faults.Fault{Kind: faults.TaskFailure, Target: "server/" + d.Servers[0].UUID.String(), Times: 1})
	require.NoError(t, err)
	_, err = e.act.ExecuteActivity(e.acts.InstallAgentImage, agents.InstallAgentRequest{Server: d.Servers[0].UUID, Agent: planned(t, d, agents.CNAgent), PollInterval: time.Second})
	assert.Equal(t, failure.AgentNotConfirmed, errType(err), err)
	assert.Contains(t, err.Error(), "task_failure")
}

// waitUntilAgentsChange's timeout: the server never shows the new
// cn-agent (its post to CNAPI fails), so the install is not confirmed.
func TestCNAgentTheServerNeverShowsIsNotConfirmed(t *testing.T) {
	d := spec.GenerateDatacenter(2, 5)
	d.Servers[0].StaleRefresh = true
	e := newSim(t, d)
	cn := planned(t, d, agents.CNAgent)
	_, err := e.act.ExecuteActivity(e.acts.InstallAgentImage, agents.InstallAgentRequest{Server: d.Servers[0].UUID, Agent: cn, PollInterval: time.Second})
	assert.Equal(t, failure.AgentNotConfirmed, errType(err), err)
	assert.Contains(t, err.Error(), "did not report within")
}

// waitUntilTaskCompletes: a failed task's reason is history[0]'s error.
func TestFailedTaskNamesTheErrorCNAPIRecordedFirst(t *testing.T) {
	d := spec.GenerateDatacenter(2, 5)
	e := newSim(t, d)
	bad := planned(t, d, "vm-agent")
	bad.Name = "net-agent" // the image is vm-agent's: cn-agent refuses it
	_, err := e.act.ExecuteActivity(e.acts.InstallAgentImage, agents.InstallAgentRequest{Server: d.Servers[0].UUID, Agent: bad})
	assert.Equal(t, failure.AgentTaskFailed, errType(err), err)
	assert.Contains(t, err.Error(), `is agent "vm-agent", not "net-agent"`)
	assert.NotContains(t, err.Error(), "without an error event")
}

// listInsts: SAPI cannot tie an older agent's instance to its server (no
// server_uuid); the agent's own UUID in server.agents does. The intent
// moves on that instance and no second one is created.
func TestIntentOfAnOlderAgentsInstanceWithoutServer(t *testing.T) {
	d := spec.GenerateDatacenter(2, 6)
	srv := d.Servers[0]
	vmAgent := srv.Agents[3]
	require.Equal(t, "vm-agent", vmAgent.Name)
	for i := range d.Instances {
		if d.Instances[i].UUID == vmAgent.UUID {
			d.Instances[i].ServerUUID = uuid.Nil
		}
	}
	e := newSim(t, d)
	vm := planned(t, d, "vm-agent")
	_, err := e.act.ExecuteActivity(e.acts.InstallAgentImage, agents.InstallAgentRequest{Server: srv.UUID, Agent: vm})
	require.NoError(t, err)
	v, err := e.act.ExecuteActivity(e.acts.RecordAgentOnServer, agents.RefreshAgentRequest{Server: srv.UUID, Agent: vm})
	require.NoError(t, err)
	var ir agents.SetAgentIntentResult
	require.NoError(t, v.Get(&ir))
	assert.Equal(t, agents.SetAgentIntentResult{InstanceUUID: vmAgent.UUID, Changed: true}, ir)

	insts, err := e.acts.SAPI.ListInstances(context.Background(), vm.ServiceUUID)
	require.NoError(t, err)
	assert.Len(t, insts, len(d.Servers), "no second instance")
	in, err := e.acts.SAPI.GetInstance(context.Background(), vmAgent.UUID)
	require.NoError(t, err)
	assert.Equal(t, vm.ImageUUID, in.Params.ImageUUID)
	assert.Equal(t, srv.UUID, in.Params.ServerUUID)
}

// getCandidateImages/resolveDeps: the update is the image published last,
// whatever the versions say.
func TestPlanTakesTheImagePublishedLast(t *testing.T) {
	d := spec.GenerateDatacenter(2, 8)
	newest, _ := d.ImageFor("vm-agent", spec.GeneratedNewVersion)
	higher := newest
	higher.UUID, higher.Version = uuid.New(), "9.0.0-master-20230101T000000Z-g0000001"
	early := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	higher.PublishedAt = &early
	d.Images = append(d.Images, higher)
	e := newSim(t, d)

	v, err := e.act.ExecuteActivity(e.acts.PlanAgentInstallDry, agents.PlanAgentInstallRequest{
		Agents: []agents.AgentRequest{{Name: "vm-agent"}}, Selection: agents.ServerSelection{All: true}})
	require.NoError(t, err)
	var rows []activities.PlanRow
	require.NoError(t, v.Get(&rows))
	require.NotEmpty(t, rows)
	for _, r := range rows {
		assert.True(t, strings.HasPrefix(r.Desired, spec.GeneratedNewVersion), "%s: %s", r.Device, r.Desired)
	}
}

// The plan flags an install of an image published before the one a server
// runs, whatever its version string says.
func TestPlanFlagsAnImagePublishedBeforeTheServersAsADowngrade(t *testing.T) {
	d := spec.GenerateDatacenter(2, 8)
	newest, _ := d.ImageFor("vm-agent", spec.GeneratedNewVersion)
	higher := newest
	higher.UUID, higher.Version = uuid.New(), "9.0.0-master-20230101T000000Z-g0000001"
	early := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	higher.PublishedAt = &early
	d.Images = append(d.Images, higher)
	e := newSim(t, d)

	v, err := e.act.ExecuteActivity(e.acts.PlanAgentInstallDry, agents.PlanAgentInstallRequest{
		Agents: []agents.AgentRequest{{Name: "vm-agent", ImageUUID: higher.UUID}}, Selection: agents.ServerSelection{All: true}})
	require.NoError(t, err)
	var rows []activities.PlanRow
	require.NoError(t, v.Get(&rows))
	require.NotEmpty(t, rows)
	for _, r := range rows {
		assert.Equal(t, activities.PlanUpdate, r.Action, r.Device)
		assert.Contains(t, r.Reason, "installs an older version", "%s runs %s, published after %s", r.Device, r.Current, higher.Version)
	}
}
