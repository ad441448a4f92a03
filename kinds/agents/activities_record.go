package agents

import "context"

// RecordAgentOnServer is the last step of one agent's saga on a server, in
// one activity task: CNAPI's server.agents first (RefreshServerAgents),
// then the SAPI intent (SetAgentIntent) with the instance UUID it returned.
// Nothing is decided between the two and both are idempotent, so a retry
// of the pair is safe and saves the workflow a task per agent.
func (a *AgentActivities) RecordAgentOnServer(ctx context.Context, r RefreshAgentRequest) (SetAgentIntentResult, error) {
	entry, err := a.RefreshServerAgents(ctx, r)
	if err != nil {
		return SetAgentIntentResult{}, err
	}
	return a.SetAgentIntent(ctx, SetAgentIntentRequest{Server: r.Server, Agent: r.Agent, InstanceUUID: entry.UUID})
}
