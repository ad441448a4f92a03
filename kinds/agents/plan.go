package agents

import (
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// PlanAgentInstall is an agent install's dry run: the servers and agents
// it would install, read from SAPI and CNAPI.
func PlanAgentInstall(ctx workflow.Context, in AgentInstallInput) workflows.UpdatePlan {
	p := workflows.UpdatePlan{Inner: in.Concurrency}
	if p.Inner == 0 {
		p.Inner = DefaultAgentConcurrency
	}
	err := workflow.ExecuteActivity(workflows.PlanOptions(ctx, "plan "+in.Target()), planAgent.PlanAgentInstallDry, PlanAgentInstallRequest{
		Agents: in.Agents, AllAgents: in.AllAgents, Selection: in.Selection, ExcludeServers: in.ExcludeServers, ExcludeAgents: in.ExcludeAgents,
	}).Get(ctx, &p.Rows)
	if err != nil {
		p.Rows = workflows.Unreadable(workflows.PlanRow{Device: "(request)"}, err)
	}
	return p
}

// PlanAgentDrift is a drift check's dry run: the drift it finds and, with
// repair, what it would do about it.
func PlanAgentDrift(ctx workflow.Context, in AgentDriftInput) workflows.UpdatePlan {
	p := workflows.UpdatePlan{Inner: in.Concurrency}
	if p.Inner == 0 {
		p.Inner = DefaultAgentConcurrency
	}
	err := workflow.ExecuteActivity(workflows.PlanOptions(ctx, "check "+in.Target()), planAgent.PlanAgentDrift, FindAgentDriftRequest{
		Agents: in.Agents, Selection: in.Selection, ExcludeServers: in.ExcludeServers,
	}, in.Repair).Get(ctx, &p.Rows)
	if err != nil {
		p.Rows = workflows.Unreadable(workflows.PlanRow{Device: "(request)"}, err)
	}
	return p
}

// planAgent names the read-only activities an agent kind's dry run calls.
var planAgent *AgentActivities
