package agents

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// The install task ID is ledgered as events of the server's attempt, steps
// "agent-task-<agent>-<image>-<n>": the last one names the task a retry
// resumes ("" after CNAPI forgot it). A heartbeat alone is not enough: it
// is throttled and lost with the worker, and a retry that starts a second
// task installs the agent twice.
func taskStepPrefix(r InstallAgentRequest) string {
	return fmt.Sprintf("agent-task-%s-%s-", r.Agent.Name, r.Agent.ImageUUID)
}

// ledgeredTask returns the task ID last recorded for this install and how
// many records there are.
func (a *AgentActivities) ledgeredTask(ctx context.Context, r InstallAgentRequest) (string, int, error) {
	if a.Store == nil || r.AttemptID == uuid.Nil {
		return "", 0, nil
	}
	evs, err := a.Store.Events(ctx, r.AttemptID)
	if err != nil {
		return "", 0, err
	}
	prefix, id, n := taskStepPrefix(r), "", 0
	for _, e := range evs {
		if strings.HasPrefix(e.Step, prefix) {
			id, n = e.Message, n+1
		}
	}
	return id, n, nil
}

// recordTask ledgers the task ID (or "" when CNAPI forgot it) as record n+1.
func (a *AgentActivities) recordTask(ctx context.Context, r InstallAgentRequest, n int, taskID string) error {
	if a.Store == nil || r.AttemptID == uuid.Nil {
		return nil
	}
	state := "running"
	if taskID == "" {
		state = "vanished"
	}
	return a.Store.AppendEvent(ctx, ledger.Event{AttemptID: r.AttemptID, Step: fmt.Sprintf("%s%d", taskStepPrefix(r), n+1),
		State: state, Message: taskID, Worker: a.Identity})
}
