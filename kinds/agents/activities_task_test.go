package agents_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleetsim/dc"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// The install activity's task ID is ledgered before it polls: a retry
// that lost the first execution's heartbeat (or its completion) resumes
// that task instead of starting a second install on the server. CNAPI's
// record stays stale here (the install is not confirmed either time), so
// only the ledger can tell.
func TestRetriedInstallResumesTheLedgeredTask(t *testing.T) {
	env := testenv.New(t)
	d := spec.GenerateDatacenter(2, 7)
	d.Servers[0].StaleRefresh = true
	sp := &spec.Spec{Seed: 1, SpeedUp: 1000, Timings: spec.DefaultTimings(), Datacenter: d}
	sim := env.StartFleetsim(sp)
	acts, err := agents.NewAgentActivities(fleet.FromFleetsim(sim.URL, ""), nil, env.Store, "test")
	require.NoError(t, err)
	acts.ReportWait = testReportWait

	ctx := context.Background()
	attempt := uuid.New()
	require.NoError(t, env.Store.RecordIntent(ctx, ledger.Attempt{ID: attempt, UpdateID: "agent-install-test", Attempt: 1,
		Kind: "agent-install", Target: "server/" + d.Servers[0].UUID.String()}))
	req := agents.InstallAgentRequest{Server: d.Servers[0].UUID, Agent: planned(t, d, "vm-agent"), AttemptID: attempt}

	run := func() string {
		// A fresh environment each time: no heartbeat details carry over.
		var ts testsuite.WorkflowTestSuite
		ae := ts.NewTestActivityEnvironment()
		ae.RegisterActivity(acts)
		_, err := ae.ExecuteActivity(acts.InstallAgentImage, req)
		require.Equal(t, failure.AgentNotConfirmed, errType(err), err)
		return taskOf(err)
	}
	first := run()
	require.NotEmpty(t, first)
	again := run()
	assert.Equal(t, first, again, "the retry resumed the ledgered task")

	resp, err := http.Get(sim.URL + "/truth/dc?server=" + d.Servers[0].UUID.String())
	require.NoError(t, err)
	defer resp.Body.Close()
	var tr dc.Truth
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tr))
	assert.Len(t, tr.Installs, 1, "one install task on the server, not two")
}

// taskOf is the task ID an AgentNotConfirmed error names.
func taskOf(err error) string {
	m := regexp.MustCompile(`task (\S+) completed`).FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	return m[1]
}
