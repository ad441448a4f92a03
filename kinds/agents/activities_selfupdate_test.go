package agents_test

// cn-agent's self-update in its real order, with a front to fleetsim that
// holds the new cn-agent's report back (docs/CONFORMANCE.md §F).

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	"github.com/fleetsaga/fleetsaga/fleetsim/domain"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
)

// lateReport sits in front of fleetsim and makes CNAPI's server.agents show
// the old cn-agent until `after` has passed since CNAPI first answered the
// task as failed: the real order of a cn-agent self-update.
type lateReport struct {
	mu       sync.Mutex
	failedAt time.Time
	after    time.Duration
	old      spec.Agent
}

func (l *lateReport) hidden() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failedAt.IsZero() || time.Since(l.failedAt) < l.after
}

func (l *lateReport) modify(resp *http.Response) error {
	p := resp.Request.URL.Path
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	switch {
	case strings.HasPrefix(p, "/cnapi/tasks/"):
		var tk triton.Task
		if json.Unmarshal(body, &tk) == nil && tk.Status == triton.TaskFailure {
			l.mu.Lock()
			if l.failedAt.IsZero() {
				l.failedAt = time.Now()
			}
			l.mu.Unlock()
		}
	case strings.HasPrefix(p, "/cnapi/servers/") && resp.Request.Method == http.MethodGet && l.hidden():
		var s map[string]any
		if json.Unmarshal(body, &s) == nil {
			if list, ok := s["agents"].([]any); ok {
				for _, a := range list {
					if m, ok := a.(map[string]any); ok && m["name"] == agents.CNAgent {
						m["image_uuid"], m["version"] = l.old.ImageUUID.String(), l.old.Version
					}
				}
				body, _ = json.Marshal(s)
			}
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// On a real CN, cn-agent's own task breaks first: apm uninstalls the old
// cn-agent (the one holding CNAPI's request) before it installs the new one
// (sdc-cn-agent lib/apm.js installPackage: "Detected %s as being already
// installed. Uninstalling before continuing"), and CNAPI records the broken
// request as a failure (sdc-cnapi lib/models/server.js sendTaskRequest).
// Only after the rest of the install (mv, postinstall.sh with its SAPI
// adoption retried 10 x 5 s, sysinfo -f) does cn-agent-update post the
// agents (agent_install.js sendAgentsToCNAPI) or the new cn-agent post them
// at its start (lib/app.js startHeartbeater). sdcadm ignores cn-agent's
// task and waits 30 min for server.agents (sdcadm
// lib/procedures/update-agent-v1.js:396-402, waitUntilAgentsChange).
// fleetsaga gives a failed cn-agent task only agentReportWait (1 min) and
// then records AgentTaskFailed, non-retryable, for an install that happened.
func TestCNAgentReportingLongAfterItsTaskBrokeIsInstalled(t *testing.T) {
	d := spec.GenerateDatacenter(2, 5)
	d.Servers[0].CNAgentTask = spec.CNAgentTaskLost
	sp := &spec.Spec{Seed: 1, SpeedUp: 1000, Timings: spec.DefaultTimings(), Datacenter: d}
	sim, err := fleetsim.Start(context.Background(), domain.Env{Spec: sp}, "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })

	old := d.Servers[0].Agents[1]
	require.Equal(t, agents.CNAgent, old.Name)
	// The new cn-agent reports five report-waits (and more than one poll)
	// after its old task broke: well within sdcadm's 30 minutes (here
	// testSelfUpdateWait).
	lr := &lateReport{after: 5 * testReportWait, old: old}
	target, err := url.Parse(sim.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = lr.modify
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)

	acts, err := agents.NewAgentActivities(fleet.FromFleetsim(front.URL, ""), nil, nil, "test")
	require.NoError(t, err)
	acts.ReportWait, acts.SelfUpdateWait = testReportWait, testSelfUpdateWait
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(acts)

	cn := planned(t, d, agents.CNAgent)
	_, err = env.ExecuteActivity(acts.InstallAgentImage, agents.InstallAgentRequest{Server: d.Servers[0].UUID, Agent: cn, PollInterval: time.Second})
	assert.NoError(t, err, "the new cn-agent runs and CNAPI shows it: the install happened (errType %q)", errType(err))
	require.Eventually(t, func() bool { return !lr.hidden() }, 10*time.Second, 50*time.Millisecond)
	s, gerr := acts.CNAPI.GetServer(context.Background(), d.Servers[0].UUID)
	require.NoError(t, gerr)
	got, _ := s.Agent(agents.CNAgent)
	assert.Equal(t, cn.ImageUUID, got.ImageUUID, "the server shows the new cn-agent")
}
