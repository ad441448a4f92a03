package ledger_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// A rollout's agent claims: two rollouts sharing an agent on a server
// cannot both hold it; different agents, or disjoint servers, can; the
// claims end with the rollout's attempt, however it ends.
func TestAgentClaims(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	env := testenv.New(t)
	ctx := context.Background()
	s := env.Store
	shared, onlyA, onlyB := uuid.New(), uuid.New(), uuid.New()
	rollout := func(target string, servers ...uuid.UUID) uuid.UUID {
		id := uuid.New()
		require.NoError(t, s.RecordIntent(ctx, ledger.Attempt{ID: id, UpdateID: "wf-" + target, Attempt: 1, Kind: "agent-install",
			Target: target + "-" + id.String(), WorkflowID: "wf-" + target, RunID: "run"}))
		var rows []ledger.AgentServer
		for i, srv := range servers {
			rows = append(rows, ledger.AgentServer{Seq: i + 1, ServerUUID: srv, Hostname: srv.String()[:8], State: ledger.AgentServerPending})
		}
		require.NoError(t, s.InsertAgentPlan(ctx, id, rows))
		return id
	}
	a := rollout("dc/vm-agent", shared, onlyA)
	require.NoError(t, s.ClaimAgents(ctx, a, []string{"vm-agent"}))
	require.NoError(t, s.ClaimAgents(ctx, a, []string{"vm-agent"}), "claiming again is a no-op")

	b := rollout("dc/all-agents", shared, onlyB)
	err := s.ClaimAgents(ctx, b, []string{"cn-agent", "vm-agent"})
	var busy *ledger.ErrTargetBusy
	require.ErrorAs(t, err, &busy)
	assert.Equal(t, a, busy.ActiveID)
	assert.Equal(t, "wf-dc/vm-agent", busy.WorkflowID)
	assert.Equal(t, ledger.AgentClaimTarget(shared, "vm-agent"), busy.Target)

	c := rollout("dc/cn-agent", shared, onlyB)
	require.NoError(t, s.ClaimAgents(ctx, c, []string{"cn-agent"}), "another agent on the same server")
	d := rollout("dc/vm-agent-elsewhere", onlyB)
	require.NoError(t, s.ClaimAgents(ctx, d, []string{"vm-agent"}), "the same agent on other servers")
	n, err := s.ActiveAgentClaims(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2+2+1, n)

	require.NoError(t, s.FinishAttempt(ctx, ledger.Finish{AttemptID: a, State: ledger.StateFailed, Outcome: "abandoned"}))
	require.NoError(t, s.FinishAttempt(ctx, ledger.Finish{AttemptID: c, State: ledger.StateCompleted}))
	require.NoError(t, s.FinishAttempt(ctx, ledger.Finish{AttemptID: d, State: ledger.StateCancelled}))
	require.NoError(t, s.ClaimAgents(ctx, b, []string{"cn-agent", "vm-agent"}), "released with the attempts")
	n, err = s.ActiveAgentClaims(ctx)
	require.NoError(t, err)
	assert.Equal(t, 4, n)

	require.NoError(t, s.FinishAttempt(ctx, ledger.Finish{AttemptID: b, State: ledger.StateCompleted}))
	require.NoError(t, s.ClaimAgents(ctx, b, []string{"vm-agent"}), "an ended rollout claims nothing")
	n, err = s.ActiveAgentClaims(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
}
