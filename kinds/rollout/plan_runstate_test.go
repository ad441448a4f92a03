package rollout

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// carryingPlan is the red team's plan: an agent install shown as the
// benign dc/vm-agent whose input carries continue-as-new state (an earlier
// rollout's ID and a plan naming another image), which a first run would
// install instead of planning.
func carryingPlan(t *testing.T) RolloutInput {
	in := json.RawMessage(`{"agents":[{"name":"vm-agent"}],"selection":{"servers":["cn000"]},` +
		`"carry":{"runs":1,"rolloutId":"8b0f4a7e-9a51-4d8e-8d1e-5f0c3c1b2a10",` +
		`"plan":{"agents":[{"name":"vm-agent","imageUuid":"0d6a1c52-4a8e-4f5e-9a57-2a1b3c4d5e6f"}],"lastSeq":40}}}`)
	return RolloutInput{Name: "carried", Stages: []Stage{{Name: "agents", Kind: workflows.KindAgentInstall, Concurrency: 1,
		Updates: []PlanUpdate{{Target: "dc/vm-agent", Input: in}}}}}
}

// requireRunStateRefused: refused, typed, naming the carry.
func requireRunStateRefused(t *testing.T, err error) {
	t.Helper()
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, failure.InvalidInput, app.Type(), "%v", err)
	require.Contains(t, app.Message(), "carry")
}

// A rollout never hands a child state that only the child's own earlier
// run writes: the plan is refused before anything runs.
func TestRolloutRefusesAPlanUpdateCarryingRunState(t *testing.T) {
	env := newRolloutEnv(t)
	var installs []string
	env.RegisterWorkflowWithOptions(func(_ workflow.Context, in json.RawMessage) error {
		installs = append(installs, string(in))
		return nil
	}, workflow.RegisterOptions{Name: "AgentInstall"})
	env.ExecuteWorkflow(Rollout, carryingPlan(t))
	require.Empty(t, installs, "the carried install was started")
	requireRunStateRefused(t, env.GetWorkflowError())
}

// The dry run refuses the same plan the same way.
func TestDryRunRefusesAPlanUpdateCarryingRunState(t *testing.T) {
	env := newRolloutEnv(t)
	env.RegisterWorkflow(DryRun)
	var ra *RolloutActivities
	env.OnActivity(ra.MeasuredDeviceTimes, mock.Anything, mock.Anything).Return(map[string]ledger.Measured{}, nil)
	env.ExecuteWorkflow(DryRun, carryingPlan(t))
	requireRunStateRefused(t, env.GetWorkflowError())
}
