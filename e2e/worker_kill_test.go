package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleetsim/dc"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/buildid"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// A worker SIGKILLed while it runs an activity: the update finishes on the
// other worker, and no device work is done twice.
func TestWorkerKilledMidActivityUpdateFinishesOnTheOther(t *testing.T) {
	workerKilledMidActivity(t, devstack.TemporalDev)
}

func workerKilledMidActivity(t *testing.T, temporal string) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	s := slowInstallFleet(t)
	stack := startStackOn(t, temporal, s, 2, 0)
	c, err := client.Dial(client.Options{HostPort: stack.Temporal.FrontendHostPort()})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run, newImage := startAgentInstall(ctx, t, c, s)

	victim := waitForRunningActivity(ctx, t, c)
	t.Logf("SIGKILL worker-%d while it runs an activity", victim)
	require.NoError(t, stack.Workers[victim].Kill())

	require.NoError(t, run.Get(ctx, nil), "the update must finish on the surviving worker")
	requireInstalledOnce(t, stack, newImage)
	requireOnStackBuild(ctx, t, c, run.GetID())
}

// requireOnStackBuild checks that a workflow ran on the dev stack's Worker
// Deployment version: the deployment of fleetsaga's task queue, the build
// the worker binary names (the stack made it current by itself).
func requireOnStackBuild(ctx context.Context, t *testing.T, c client.Client, workflowID string) {
	t.Helper()
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	require.NoError(t, err)
	v := d.GetWorkflowExecutionInfo().GetVersioningInfo().GetDeploymentVersion()
	require.Equal(t, devstack.DeploymentFor(workflows.TaskQueue), v.GetDeploymentName(), "%s ran unversioned", workflowID)
	require.Equal(t, buildid.Of(filepath.Join(binaries(t), "worker")), v.GetBuildId())
}

// slowInstallFleet is three servers whose installs take long enough that a
// kill or restart lands mid-activity.
func slowInstallFleet(t *testing.T) *spec.Spec {
	t.Helper()
	s, err := spec.Generate(spec.GenerateOptions{Servers: 3, Seed: 11, SpeedUp: 1})
	require.NoError(t, err)
	s.Timings.AgentInstallTime = spec.Duration{Duration: 15 * time.Second}
	return s
}

// startAgentInstall starts the new vm-agent on every server of s.
func startAgentInstall(ctx context.Context, t *testing.T, c client.Client, s *spec.Spec) (client.WorkflowRun, spec.Image) {
	t.Helper()
	newImage, ok := s.Datacenter.ImageFor("vm-agent", spec.GeneratedNewVersion)
	require.True(t, ok)
	in := agents.AgentInstallInput{
		Agents:       []agents.AgentRequest{{Name: "vm-agent", ImageUUID: newImage.UUID}},
		Selection:    agents.ServerSelection{All: true},
		Concurrency:  3,
		PollInterval: time.Second,
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.WorkflowID(workflows.KindAgentInstall, in.Target()), TaskQueue: workflows.TaskQueue,
		TypedSearchAttributes: workflows.StartAttributes(workflows.KindAgentInstall, in.Target(), in.ArtifactVersion()),
	}, agents.AgentInstall, in)
	require.NoError(t, err)
	return run, newImage
}

// requireInstalledOnce checks fleetsim's truth: every server runs newImage,
// installed exactly once.
func requireInstalledOnce(t *testing.T, stack *devstack.Stack, newImage spec.Image) {
	t.Helper()
	truth := dcTruth(t, stack.FleetsimURL)
	installs := map[string]int{}
	for _, rec := range truth.Installs {
		if rec.ImageUUID == newImage.UUID {
			installs[rec.ServerUUID.String()]++
		}
	}
	for _, srv := range truth.Servers {
		require.Equal(t, 1, installs[srv.UUID.String()], "server %s: the image is installed exactly once", srv.Hostname)
		for _, ag := range srv.Agents {
			if ag.Name == "vm-agent" {
				require.Equal(t, newImage.UUID, ag.ImageUUID, "server %s runs the new vm-agent", srv.Hostname)
			}
		}
	}
}

// waitForRunningActivity returns the index of a worker that has an
// activity started and running right now.
func waitForRunningActivity(ctx context.Context, t *testing.T, c client.Client) int {
	t.Helper()
	for ctx.Err() == nil {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: `ExecutionStatus = "Running"`})
		require.NoError(t, err)
		for _, e := range resp.GetExecutions() {
			desc, err := c.DescribeWorkflowExecution(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId())
			if err != nil {
				continue
			}
			for _, pa := range desc.GetPendingActivities() {
				if pa.GetState() != enumspb.PENDING_ACTIVITY_STATE_STARTED || pa.GetLastStartedTime() == nil ||
					time.Since(pa.GetLastStartedTime().AsTime()) < 2*time.Second {
					continue
				}
				switch {
				case strings.HasPrefix(pa.GetLastWorkerIdentity(), "worker-0"):
					return 0
				case strings.HasPrefix(pa.GetLastWorkerIdentity(), "worker-1"):
					return 1
				}
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatal("no activity started on a worker in time")
	return -1
}

func dcTruth(t *testing.T, base string) dc.Truth {
	t.Helper()
	resp, err := http.Get(base + "/truth/dc")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var tr dc.Truth
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tr))
	return tr
}
