package agents

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// publishedPhases collects every FleetsagaPhase value a test workflow
// upserts.
func publishedPhases(env *testsuite.TestWorkflowEnvironment) *[]string {
	var out []string
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		if v, ok := args.Get(0).(temporal.SearchAttributes).GetKeyword(workflows.SAPhase); ok {
			out = append(out, v)
		}
	}).Return(nil)
	return &out
}

func requireClosedSet(t *testing.T, phases []string) {
	t.Helper()
	require.NotEmpty(t, phases)
	for _, p := range phases {
		require.True(t, workflows.Phase(p).Known(), "FleetsagaPhase %q is not one of the typed phases", p)
	}
}

// FleetsagaPhase is a Keyword the Web UI filters on: the fan-outs and the
// rollout publish only typed phase names there, never hostnames, counts or
// durations (those go to the details and the progress query).
func TestFanOutsPublishOnlyTypedPhases(t *testing.T) {
	t.Run("agent install with a straggler", func(t *testing.T) {
		f := newFakeFleet(10)
		f.take["cn007"] = 30 * time.Minute
		env := f.env(t)
		phases := publishedPhases(env)
		in := vmInput()
		in.StragglerCheck = time.Minute
		env.ExecuteWorkflow(AgentInstall, in)
		require.NoError(t, env.GetWorkflowError())
		requireClosedSet(t, *phases)
		require.Contains(t, *phases, string(workflows.PhaseInstalling))
	})
	t.Run("agent install server", func(t *testing.T) {
		env, _, _ := serverEnv(t, nil, nil, nil)
		phases := publishedPhases(env)
		env.ExecuteWorkflow(AgentInstallServer, AgentServerInput{RolloutID: uuid.New(), Server: uuid.New(), Hostname: "cn1",
			Agents: OrderAgents([]PlannedAgent{vmAgent, cnAgent})})
		require.NoError(t, env.GetWorkflowError())
		requireClosedSet(t, *phases)
	})
}
