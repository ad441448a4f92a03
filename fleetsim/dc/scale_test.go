package dc_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
)

// TestThousandServersMemoryAndInstalls installs one agent on 1,000 servers
// at once and checks the datacenter's share of fleetsim's 500 MiB budget
// (1,000 servers + 1,000 SPs): under 64 MiB of live heap.
func TestThousandServersMemoryAndInstalls(t *testing.T) {
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	d := spec.GenerateDatacenter(1000, 11)
	e := start(t, d)
	ctx := context.Background()
	im := newImage(t, d, "vm-agent")
	ids := make([]string, len(d.Servers))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(50)
	for i, s := range d.Servers {
		g.Go(func() error {
			id, err := e.cnapi.InstallAgent(gctx, s.UUID, triton.InstallAgentRequest{ImageUUID: im.UUID})
			ids[i] = id
			return err
		})
	}
	require.NoError(t, g.Wait())
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(50)
	for _, id := range ids {
		g.Go(func() error {
			for {
				task, err := e.cnapi.WaitTask(gctx, id, 10e9)
				if err != nil || task.Done() {
					if err == nil && task.Status != triton.TaskComplete {
						t.Errorf("task %s: %s", id, task.ErrorMessage())
					}
					return err
				}
			}
		})
	}
	require.NoError(t, g.Wait())

	all, err := e.cnapi.ListServers(ctx, triton.ListServersOptions{Agents: true})
	require.NoError(t, err)
	require.Len(t, all, 1000)
	for _, s := range all {
		a, ok := s.Agent("vm-agent")
		require.True(t, ok)
		assert.Equal(t, im.UUID, a.ImageUUID)
	}
	tr := e.truth(t, [16]byte{})
	assert.Len(t, tr.Installs, 1000)

	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("live heap grew by %.1f MiB for 1,000 servers and 1,000 finished tasks", float64(grown)/(1<<20))
	assert.Less(t, grown, int64(64<<20))
}

func TestGenerateDatacenterIsDeterministicAndValid(t *testing.T) {
	a, b := spec.GenerateDatacenter(50, 5), spec.GenerateDatacenter(50, 5)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a.Servers[0].UUID, spec.GenerateDatacenter(50, 6).Servers[0].UUID)
	sp := &spec.Spec{SpeedUp: 1, Datacenter: a}
	require.NoError(t, sp.Validate())
	assert.Len(t, a.Servers, 50)
	assert.Len(t, a.Images, 2*len(spec.GeneratedAgents))
	manta := 0
	for _, s := range a.Servers {
		if s.Traits["manta"] == "true" {
			manta++
			assert.Len(t, s.Agents, len(spec.GeneratedAgents))
		} else {
			assert.Len(t, s.Agents, len(spec.GeneratedAgents)-1, "marlin only on manta nodes")
		}
	}
	assert.Equal(t, 13, manta)
	assert.Len(t, a.Instances, 50*(len(spec.GeneratedAgents)-1)+13)
}

func TestDatacenterSpecYAML(t *testing.T) {
	y := `
speedUp: 100
datacenter:
  servers:
  - uuid: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0001
    hostname: cn1
    status: unknown
    setup: false
    traits: {rack: r1}
    agents:
    - {name: vm-agent, version: 1.0.0, imageUUID: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0002, uuid: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0003}
  images:
  - {uuid: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0002, name: vm-agent, version: 1.0.0, size: 1024, slowness: {9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0001: 3}}
  services:
  - {uuid: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0004, name: vm-agent, imageUUID: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0002}
  instances:
  - {uuid: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0003, serviceUUID: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0004, serverUUID: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0001, imageUUID: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0002}
`
	sp, err := spec.Parse([]byte(y))
	require.NoError(t, err)
	require.Len(t, sp.Datacenter.Servers, 1)
	assert.False(t, sp.Datacenter.Servers[0].IsSetup())
	assert.Equal(t, spec.ServerUnknown, sp.Datacenter.Servers[0].EffectiveStatus())

	for name, bad := range map[string]string{
		"unknown field":   "datacenter: {servers: [{uuid: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0001, hostname: a, colour: red}]}",
		"bad status":      "datacenter: {servers: [{uuid: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0001, hostname: a, status: sleepy}]}",
		"no hostname":     "datacenter: {servers: [{uuid: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0001}]}",
		"bad image size":  "datacenter: {images: [{uuid: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0002, name: a, version: '1', size: 0}]}",
		"orphan instance": "datacenter: {instances: [{uuid: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0003, serviceUUID: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0004, serverUUID: 9b3b3a6e-0d38-4c39-8b7e-6f7c1f1b0001}]}",
	} {
		_, err := spec.Parse([]byte(bad))
		assert.Error(t, err, name)
	}
}
