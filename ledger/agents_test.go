package ledger_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

func TestAgentRolloutPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	env := testenv.New(t)
	ctx := context.Background()
	s := env.Store
	rollout := uuid.New()
	var rows []ledger.AgentServer
	for i := range 2500 {
		r := ledger.AgentServer{Seq: i + 1, ServerUUID: uuid.New(), Hostname: fmt.Sprintf("cn%04d", i), State: ledger.AgentServerPending}
		if i%500 == 7 {
			r.State, r.Reason = ledger.AgentServerSkipped, "offline"
		}
		rows = append(rows, r)
	}
	require.NoError(t, s.InsertAgentPlan(ctx, rollout, rows))
	// A retried plan (even a different one) keeps the first rows.
	changed := append([]ledger.AgentServer(nil), rows...)
	changed[0].Hostname = "renamed"
	require.NoError(t, s.InsertAgentPlan(ctx, rollout, changed))
	counts, err := s.AgentRolloutCounts(ctx, rollout)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{ledger.AgentServerPending: 2495, ledger.AgentServerSkipped: 5}, counts)

	page, err := s.PendingAgentServers(ctx, rollout, 0, 10)
	require.NoError(t, err)
	require.Len(t, page, 10)
	assert.Equal(t, "cn0000", page[0].Hostname)
	assert.Equal(t, 9, page[7].Seq, "cn0007 (seq 8) was skipped")
	assert.Equal(t, "cn0008", page[7].Hostname)

	first := page[0]
	att := uuid.New()
	require.NoError(t, s.SetAgentServer(ctx, rollout, ledger.AgentServer{ServerUUID: first.ServerUUID, State: ledger.AgentServerRunning, AttemptID: att}))
	require.NoError(t, s.SetAgentServer(ctx, rollout, ledger.AgentServer{ServerUUID: first.ServerUUID, State: ledger.AgentServerDone, Outcome: "installed", DurationMS: 1200}))
	require.NoError(t, s.SetAgentServer(ctx, rollout, ledger.AgentServer{ServerUUID: first.ServerUUID, State: ledger.AgentServerFailed, Reason: "late"}))
	done, err := s.AgentServers(ctx, rollout, ledger.AgentServerDone, 0)
	require.NoError(t, err)
	require.Len(t, done, 1)
	assert.Equal(t, att, done[0].AttemptID, "the attempt recorded while running is kept")
	assert.Equal(t, int64(1200), done[0].DurationMS)
	assert.Equal(t, "installed", done[0].Outcome, "the first ending stands")
	assert.Error(t, s.SetAgentServer(ctx, rollout, ledger.AgentServer{ServerUUID: uuid.New(), State: ledger.AgentServerDone}))

	// The rows of the servers in flight only, by plan sequence number.
	some, err := s.AgentServersBySeq(ctx, rollout, []int{9, 1, 4000})
	require.NoError(t, err)
	require.Len(t, some, 2)
	assert.Equal(t, []int{1, 9}, []int{some[0].Seq, some[1].Seq})
	assert.Equal(t, ledger.AgentServerDone, some[0].State)
	assert.Equal(t, "cn0008", some[1].Hostname)

	next, err := s.PendingAgentServers(ctx, rollout, 2490, 100)
	require.NoError(t, err)
	assert.Len(t, next, 10)
	n, err := s.StopAgentRollout(ctx, rollout, "budget")
	require.NoError(t, err)
	assert.Equal(t, 2494, n)
	counts, err = s.AgentRolloutCounts(ctx, rollout)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{ledger.AgentServerDone: 1, ledger.AgentServerSkipped: 5, ledger.AgentServerNotStarted: 2494}, counts)
}
