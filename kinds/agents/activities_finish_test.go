package agents_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// A server's ending whose intent write was in doubt writes the intent
// (idempotent) and ends it, so a write that lands late leaves nothing
// pending; a target busy with another attempt leaves that one alone.
func TestFinishAgentServerWritesAnAttemptInDoubt(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	env := testenv.New(t)
	ctx := context.Background()
	a := &agents.AgentActivities{Store: env.Store}
	server := uuid.New()
	att := ledger.Attempt{ID: uuid.New(), UpdateID: "wf", Attempt: 1, Kind: "agent-install", Target: "server/" + server.String(),
		WorkflowID: "wf", RunID: "run"}
	end := agents.FinishAgentServerRequest{Server: server, AttemptID: att.ID, State: ledger.StateCancelled,
		Outcome: "cancelled", Intent: &att}
	require.NoError(t, a.FinishAgentServer(ctx, end))
	require.NoError(t, a.FinishAgentServer(ctx, end), "idempotent")
	got, err := env.Store.Get(ctx, att.ID)
	require.NoError(t, err)
	assert.Equal(t, ledger.StateCancelled, got.State)
	require.Error(t, env.Store.RecordIntent(ctx, ledger.Attempt{ID: att.ID, UpdateID: "other", Attempt: 1, Kind: "agent-install",
		Target: att.Target, WorkflowID: "wf", RunID: "run"}), "the late write cannot come back under the same id")

	other := ledger.Attempt{ID: uuid.New(), UpdateID: "wf2", Attempt: 1, Kind: "agent-install", Target: att.Target, WorkflowID: "wf2", RunID: "run"}
	require.NoError(t, env.Store.RecordIntent(ctx, other))
	mine := att
	mine.ID, mine.RunID = uuid.New(), "run2"
	require.NoError(t, a.FinishAgentServer(ctx, agents.FinishAgentServerRequest{Server: server, AttemptID: mine.ID,
		State: ledger.StateCancelled, Outcome: "cancelled", Intent: &mine}), "busy: ours was never written")
	active, err := env.Store.ActiveForTarget(ctx, att.Target)
	require.NoError(t, err)
	require.NotNil(t, active)
	assert.Equal(t, other.ID, active.ID, "the other update's attempt is untouched")
}
