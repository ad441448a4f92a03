package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// A run an operator reset keeps the original run ID and counts its events
// again: the ledger answers what the run before it recorded at a point (a
// round's verdict stays), and a different decision appended after every
// recorded row is written once however often it is retried.
func TestRolloutEventKeepsTheRecordedDecision(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: PostgreSQL")
	}
	env := testenv.New(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 27, 1, 0, 0, 123456789, time.UTC) // finer than PostgreSQL keeps
	row := func(seq int, kind, verdict, reason string) ledger.RolloutEvent {
		return ledger.RolloutEvent{Rollout: "r", RunID: "orig", Seq: seq, Stage: "sps", Kind: kind, Verdict: verdict, Reason: reason, At: at}
	}
	failed := row(1, "gate-round", "fail", "batch 1 round 1: 1 of 4 readings not == 1")
	got, err := env.Store.RecordRolloutEvent(ctx, failed)
	require.NoError(t, err)
	require.Equal(t, "fail", got.Verdict)
	_, err = env.Store.RecordRolloutEvent(ctx, row(2, "aborted", "", "health gate failed after batch 1"))
	require.NoError(t, err)

	got, err = env.Store.RecordRolloutEvent(ctx, row(1, "gate-round", "pass", "batch 1 round 1: 4 checks passed"))
	require.NoError(t, err)
	require.Equal(t, "fail", got.Verdict, "the recorded verdict stands")
	require.Equal(t, failed.Reason, got.Reason)

	wait := row(2, "window-wait", "", "outside the maintenance windows")
	for range 2 { // a retried append
		got, err = env.Store.AppendRolloutEvent(ctx, wait)
		require.NoError(t, err)
		require.Equal(t, 3, got.Seq, "after every recorded row")
	}
	all, err := env.Store.RolloutEvents(ctx, "r")
	require.NoError(t, err)
	require.Len(t, all, 3)
	require.Equal(t, []string{"gate-round", "aborted", "window-wait"}, []string{all[0].Kind, all[1].Kind, all[2].Kind})
}

// A reset run looks up a gate round by its reason's start in its stage:
// only that run chain's rows of that stage match, and a prefix's LIKE
// wildcards are literal.
func TestRolloutEventsOfStageMatchesReasonPrefixes(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: PostgreSQL")
	}
	env := testenv.New(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	for i, r := range []struct{ run, stage, reason string }{
		{"orig", "sps", "batch 1 round 2: 4 checks passed"},
		{"orig", "sps", "batch 1 round 20: 4 checks passed"},
		{"orig", "sps", "batch 1 healthy after 2 rounds: 4 checks passed"},
		{"orig", "hosts", "batch 1 round 2: 4 checks passed"},
		{"other", "sps", "batch 1 round 2: 4 checks passed"},
		{"orig", "sps", "batch 1 round 2x 4 checks passed"},
	} {
		_, err := env.Store.RecordRolloutEvent(ctx, ledger.RolloutEvent{Rollout: "r-prefixes", RunID: r.run, Seq: i + 1, Stage: r.stage, Kind: "gate-round", Reason: r.reason, At: at})
		require.NoError(t, err)
	}
	got, err := env.Store.RolloutEventsOfStage(ctx, "r-prefixes", "orig", "sps", "batch 1 round 2: ", "batch 1 healthy after 2 rounds: ")
	require.NoError(t, err)
	var seqs []int
	for _, e := range got {
		seqs = append(seqs, e.Seq)
	}
	require.Equal(t, []int{1, 3}, seqs)
	got, err = env.Store.RolloutEventsOfStage(ctx, "r-prefixes", "orig", "sps", "batch 1 round 2_")
	require.NoError(t, err)
	require.Empty(t, got, "_ is not a wildcard")
}
