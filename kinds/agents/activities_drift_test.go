package agents_test

// FindAgentDrift's decisions on fleetsim (docs/CONFORMANCE.md §F).

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
)

// Which side of a mismatch is behind is decided by the images' published_at
// (sdcadm lib/cli/do_update_agents.js), never by version strings: an
// agent's version often stays the same across builds, and compared as
// text a master build (June) sorts before a release build (January). A
// server at the image published last, with an intent at an earlier one,
// gets its intent repaired, never the earlier image installed.
func TestDriftRepairNeverInstallsAnImagePublishedEarlier(t *testing.T) {
	d := spec.GenerateDatacenter(2, 9)
	newest, ok := d.ImageFor("vm-agent", spec.GeneratedNewVersion)
	require.True(t, ok)
	// fleetsim publishes unstamped spec images from 2024-01-01 on, an hour
	// apart: give both their own dates.
	june, january := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC), time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	for i := range d.Images {
		if d.Images[i].UUID == newest.UUID {
			d.Images[i].PublishedAt = &june
		}
	}
	release := newest
	release.UUID, release.Version = uuid.New(), "1.1.0-release-20240101T000000Z-g0000001"
	release.PublishedAt = &january
	d.Images = append(d.Images, release)
	e := newSim(t, d)
	ctx := context.Background()
	vm := planned(t, d, "vm-agent")
	srv := d.Servers[0]
	require.Equal(t, "vm-agent", srv.Agents[3].Name)

	_, err := e.act.ExecuteActivity(e.acts.InstallAgentImage, agents.InstallAgentRequest{Server: srv.UUID, Agent: vm})
	require.NoError(t, err)
	_, err = e.acts.SAPI.SetInstanceImage(ctx, srv.Agents[3].UUID, srv.UUID, release.UUID)
	require.NoError(t, err)

	v, err := e.act.ExecuteActivity(e.acts.FindAgentDrift, agents.FindAgentDriftRequest{Agents: []string{"vm-agent"},
		Selection: agents.ServerSelection{Servers: []string{srv.Hostname}}})
	require.NoError(t, err)
	var rep agents.AgentDriftReport
	require.NoError(t, v.Get(&rep))
	require.Len(t, rep.Drift, 1)
	assert.Equal(t, agents.DriftMismatch, rep.Drift[0].Kind)
	assert.NotEqual(t, agents.RepairInstall, rep.Drift[0].Repair,
		"the server runs the image published last (%s); installing the intent's %s is a downgrade", vm.Version, release.Version)
}

// An older agent's SAPI instance carries no server_uuid (sdcadm
// lib/sdcadm.js listInsts); the drift check ties it to its server by the
// agent's own UUID in server.agents, as SetAgentIntent does, instead of
// reporting the server's instance missing.
func TestDriftTiesAnOlderAgentsInstanceWithoutServerByItsUUID(t *testing.T) {
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
	v, err := e.act.ExecuteActivity(e.acts.FindAgentDrift, agents.FindAgentDriftRequest{Agents: []string{"vm-agent"},
		Selection: agents.ServerSelection{Servers: []string{srv.Hostname}}})
	require.NoError(t, err)
	var rep agents.AgentDriftReport
	require.NoError(t, v.Get(&rep))
	assert.Empty(t, rep.Drift, "intent and actual agree: instance %s is the agent's own (its UUID), at the image the server runs", vmAgent.UUID)
}
