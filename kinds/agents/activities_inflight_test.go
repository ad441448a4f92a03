package agents_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// The servers in flight whose plan row ended are reported with the row's
// outcome; those still open are not (without Temporal, whether their child
// still runs cannot be told, so they are waited for).
func TestAgentServersEndedReportsEndedRows(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	env := testenv.New(t)
	ctx := context.Background()
	rollout := uuid.New()
	rows := make([]ledger.AgentServer, 3)
	for i := range rows {
		rows[i] = ledger.AgentServer{Seq: i + 1, ServerUUID: uuid.New(), Hostname: "cn" + string(rune('a'+i)), State: ledger.AgentServerRunning}
	}
	require.NoError(t, env.Store.InsertAgentPlan(ctx, rollout, rows))
	require.NoError(t, env.Store.SetAgentServer(ctx, rollout, ledger.AgentServer{ServerUUID: rows[0].ServerUUID, State: ledger.AgentServerDone, Outcome: "installed"}))
	require.NoError(t, env.Store.SetAgentServer(ctx, rollout, ledger.AgentServer{ServerUUID: rows[1].ServerUUID, State: ledger.AgentServerFailed, Outcome: "cancelled", Reason: "cancelled"}))

	a := &agents.AgentLedgerActivities{Ledger: &activities.LedgerActivities{Store: env.Store}}
	got, err := a.AgentServersEnded(ctx, agents.AgentServersEndedRequest{RolloutID: rollout, Servers: []agents.InFlightAgentServer{
		{Seq: 1, ChildID: "c1"}, {Seq: 2, ChildID: "c2"}, {Seq: 3, ChildID: "c3"}}})
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, agents.EndedAgentServer{Seq: 1, Server: rows[0].ServerUUID, Hostname: "cna", Outcome: "installed"}, got[0])
	assert.Equal(t, 2, got[1].Seq)
	assert.Equal(t, "cancelled", got[1].Outcome)
}
