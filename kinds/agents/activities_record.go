package agents

import "context"

// RecordAgentOnServer is the last step of one agent's saga on a server, in
// one activity task: the server's own agent list in CNAPI must show the
// image (ConfirmServerAgent, which only reads), then the SAPI intent
// moves (SetAgentIntent) with the instance UUID it found. Both are
// idempotent, so a retry of the pair is safe and saves the workflow a
// task per agent.
func (a *AgentActivities) RecordAgentOnServer(ctx context.Context, r RefreshAgentRequest) (SetAgentIntentResult, error) {
	entry, err := a.ConfirmServerAgent(ctx, r)
	if err != nil {
		return SetAgentIntentResult{}, err
	}
	return a.SetAgentIntent(ctx, SetAgentIntentRequest{Server: r.Server, Agent: r.Agent, InstanceUUID: entry.UUID})
}
