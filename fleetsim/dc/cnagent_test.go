package dc_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim/dc"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// cn-agent installs itself through cn-agent-update: CNAPI's task never
// hears how it ended, while the new cn-agent posts its agents to CNAPI
// when it starts (sdc-cn-agent agent_install.js, lib/app.js).
func TestCNAgentSelfUpdateReportsThroughTheServerNotTheTask(t *testing.T) {
	d := small()
	d.Servers[1].StaleRefresh = true
	cn := newImage(t, d, dc.CNAgent)
	e := start(t, d)
	ctx := context.Background()

	for _, srv := range d.Servers[:2] {
		id, err := e.cnapi.InstallAgent(ctx, srv.UUID, triton.InstallAgentRequest{ImageUUID: cn.UUID, PackageName: dc.CNAgent})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			return len(e.truth(t, srv.UUID).Servers[0].ActiveTask) == 0
		}, 10*time.Second, 10*time.Millisecond, "the new cn-agent takes the next task")
		task, err := e.cnapi.WaitTask(ctx, id, time.Second)
		require.NoError(t, err)
		assert.Equal(t, triton.TaskActive, task.Status, "CNAPI's task never reports")
		tr := e.truth(t, srv.UUID).Servers[0]
		assert.Equal(t, cn.UUID, agentImage(tr.Agents, dc.CNAgent), "the new cn-agent runs")
		s, err := e.cnapi.GetServer(ctx, srv.UUID)
		require.NoError(t, err)
		got, _ := s.Agent(dc.CNAgent)
		if srv.StaleRefresh {
			assert.NotEqual(t, cn.UUID, got.ImageUUID, "its post to CNAPI failed: server.agents stays behind")
		} else {
			assert.Equal(t, cn.UUID, got.ImageUUID, "the new cn-agent posted its agents")
			assert.Equal(t, cn.Version, got.Version)
		}
	}
}

// The old cn-agent is stopped before the new one runs (sdc-cn-agent
// npm/postuninstall.sh, then npm/postinstall.sh and lib/app.js), so CNAPI
// records the broken request while server.agents still shows the old
// cn-agent (sdc-cnapi lib/models/server.js sendTaskRequest).
func TestCNAgentTaskBreaksBeforeTheNewCNAgentReports(t *testing.T) {
	d := small()
	d.Servers[0].CNAgentTask = spec.CNAgentTaskLost
	cn := newImage(t, d, dc.CNAgent)
	e := start(t, d)
	ctx := context.Background()
	srv := d.Servers[0].UUID

	id, err := e.cnapi.InstallAgent(ctx, srv, triton.InstallAgentRequest{ImageUUID: cn.UUID, PackageName: dc.CNAgent})
	require.NoError(t, err)
	task, err := e.cnapi.WaitTask(ctx, id, 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, triton.TaskFailure, task.Status, "CNAPI records the request the old cn-agent held as broken")
	s, err := e.cnapi.GetServer(ctx, srv)
	require.NoError(t, err)
	got, _ := s.Agent(dc.CNAgent)
	assert.NotEqual(t, cn.UUID, got.ImageUUID, "the new cn-agent has not posted its agents yet")
	require.Eventually(t, func() bool {
		s, err := e.cnapi.GetServer(ctx, srv)
		if err != nil {
			return false
		}
		got, _ := s.Agent(dc.CNAgent)
		return got.ImageUUID == cn.UUID
	}, 10*time.Second, 10*time.Millisecond, "the new cn-agent posts its agents later")
}

func agentImage(as []triton.Agent, name string) uuid.UUID {
	for _, a := range as {
		if a.Name == name {
			return a.ImageUUID
		}
	}
	return uuid.Nil
}
