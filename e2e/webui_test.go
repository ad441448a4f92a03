package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/kinds"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// The Web UI of the dev stack finds a rollout by its search attribute. The
// screenshot is kept under e2e/artifacts/ (or $FLEETSAGA_ARTIFACTS).
func TestWebUIFindsRolloutBySearchAttribute(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	browser, err := exec.LookPath("chromium")
	require.NoError(t, err, "the Web UI test needs Debian's chromium (make test installs it when run as root)")

	s, err := spec.Generate(spec.GenerateOptions{Servers: 2, Seed: 5, SpeedUp: 1})
	require.NoError(t, err)
	s.Timings.AgentInstallTime = spec.Duration{Duration: 10 * time.Minute} // keep it running while we look
	uiPort, err := devstack.FreePort()
	require.NoError(t, err)
	stack := startStack(t, s, 1, uiPort)

	c, err := client.Dial(client.Options{HostPort: stack.Temporal.FrontendHostPort()})
	require.NoError(t, err)
	defer c.Close()
	img, _ := s.Datacenter.ImageFor("vm-agent", spec.GeneratedNewVersion)
	in := agents.AgentInstallInput{Agents: []agents.AgentRequest{{Name: "vm-agent", ImageUUID: img.UUID}},
		Selection: agents.ServerSelection{All: true}}
	raw, err := json.Marshal(in)
	require.NoError(t, err)
	plan := kinds.RolloutInput{Name: "webui-e2e", Stages: []kinds.Stage{{Name: "agents", Kind: workflows.KindAgentInstall,
		Concurrency: 1, Updates: []kinds.PlanUpdate{{Target: in.Target(), Artifact: in.ArtifactVersion(), Input: raw}}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: kinds.RolloutWorkflowID(plan.Name), TaskQueue: workflows.TaskQueue,
		TypedSearchAttributes: workflows.StartAttributes(workflows.KindRollout, "plan/"+plan.Name, "")}, kinds.Rollout, plan)
	require.NoError(t, err)

	// The child update and the rollout itself carry FleetsagaRollout: one
	// filter finds both (issue 28). Wait until visibility has them.
	query := fmt.Sprintf(`%s = %q`, workflows.SARollout.GetName(), plan.Name)
	childID := workflows.WorkflowID(workflows.KindAgentInstall, in.Target())
	rolloutID := kinds.RolloutWorkflowID(plan.Name)
	require.Eventually(t, func() bool {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		ids := map[string]bool{}
		for _, e := range resp.GetExecutions() {
			ids[e.GetExecution().GetWorkflowId()] = true
		}
		return err == nil && ids[childID] && ids[rolloutID]
	}, time.Minute, 500*time.Millisecond)

	page := fmt.Sprintf("http://127.0.0.1:%d/namespaces/default/workflows?query=%s", uiPort, url.QueryEscape(query))
	artifacts := os.Getenv("FLEETSAGA_ARTIFACTS")
	if artifacts == "" {
		root, err := devstack.RepoRoot()
		require.NoError(t, err)
		artifacts = filepath.Join(root, "e2e", "artifacts")
	}
	require.NoError(t, os.MkdirAll(artifacts, 0o755))
	shot := filepath.Join(artifacts, "webui-rollout.png")
	var dom string
	require.Eventually(t, func() bool {
		dom = headless(t, browser, "--dump-dom", page)
		return strings.Contains(dom, childID) && strings.Contains(dom, rolloutID)
	}, time.Minute, time.Second, "the Web UI lists %s and %s for %s", childID, rolloutID, query)
	headless(t, browser, "--screenshot="+shot, "--window-size=1500,900", page)
	st, err := os.Stat(shot)
	require.NoError(t, err)
	require.Greater(t, st.Size(), int64(10_000), "screenshot %s looks empty", shot)
	t.Logf("Web UI screenshot: %s", shot)
}

// headless runs Debian's chromium headless, offline-safe, on one page.
func headless(t *testing.T, browser string, args ...string) string {
	t.Helper()
	profile := t.TempDir()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile, "--virtual-time-budget=15000"}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, browser, append(base, args...)...).Output()
	return string(out)
}
