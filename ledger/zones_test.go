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

func zoneAttempt(t *testing.T, s *ledger.Store, zone uuid.UUID) uuid.UUID {
	t.Helper()
	a := ledger.Attempt{ID: uuid.New(), UpdateID: "fleetsaga/zone-expunge/zone/" + zone.String(), Attempt: 1,
		Kind: "zone-expunge", Target: "zone/" + zone.String(), WorkflowID: "wf", RunID: "run"}
	require.NoError(t, s.RecordIntent(context.Background(), a))
	return a.ID
}

func TestZoneExpungeLifecycle(t *testing.T) {
	ctx := context.Background()
	s := testenv.New(t).Store
	zone, sled, owner := uuid.New(), uuid.New(), uuid.New()
	att := zoneAttempt(t, s, zone)

	_, err := s.ZoneDisposition(ctx, zone)
	require.ErrorIs(t, err, ledger.ErrZoneNotExpunged)

	z, err := s.RecordZoneExpunge(ctx, ledger.ExpungeIntent{ZoneID: zone, SledID: sled, Kind: "nexus", ExpungedAsOf: 4, AttemptID: att})
	require.NoError(t, err)
	assert.Equal(t, ledger.ZoneExpunged, z.Disposition)
	assert.Equal(t, uint64(4), z.ExpungedAsOf)
	assert.False(t, z.ReadyForCleanup)

	// Recording again (a retry, or a resumed run that read a newer
	// generation) keeps the first record.
	z, err = s.RecordZoneExpunge(ctx, ledger.ExpungeIntent{ZoneID: zone, SledID: sled, Kind: "nexus", ExpungedAsOf: 6, AttemptID: att})
	require.NoError(t, err)
	assert.Equal(t, uint64(4), z.ExpungedAsOf)
	_, err = s.RecordZoneExpunge(ctx, ledger.ExpungeIntent{ZoneID: zone, SledID: uuid.New(), Kind: "nexus", ExpungedAsOf: 4, AttemptID: att})
	assert.Error(t, err, "same zone on another sled")

	expunged, err := s.ExpungedZones(ctx, []uuid.UUID{zone, owner})
	require.NoError(t, err)
	assert.Equal(t, map[uuid.UUID]bool{zone: true}, expunged)

	// The gate: no saga records and no commit before the inventory proof.
	err = s.RecordSagaReassignment(ctx, ledger.SagaReassignment{ZoneID: zone, AttemptID: att, NewOwner: owner, Sagas: []uuid.UUID{uuid.New()}})
	require.ErrorIs(t, err, ledger.ErrNotReadyForCleanup)
	_, err = s.CompleteZoneExpunge(ctx, zone, 0, owner)
	require.ErrorIs(t, err, ledger.ErrNotReadyForCleanup)

	// Rebase: the sled moved on to 6 with the zone still in.
	z, err = s.RebaseZoneExpunge(ctx, zone, 4, 7)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), z.ExpungedAsOf)
	z, err = s.RebaseZoneExpunge(ctx, zone, 4, 7)
	require.NoError(t, err, "repeating a rebase is harmless")
	assert.Equal(t, uint64(7), z.ExpungedAsOf)
	_, err = s.RebaseZoneExpunge(ctx, zone, 4, 9)
	assert.Error(t, err, "rebasing from a generation the record no longer has")
	_, err = s.RebaseZoneExpunge(ctx, zone, 7, 7)
	assert.Error(t, err)

	// A generation below the expunge does not prove anything.
	_, err = s.MarkZoneReadyForCleanup(ctx, zone, 6)
	require.Error(t, err)
	z, err = s.MarkZoneReadyForCleanup(ctx, zone, 8)
	require.NoError(t, err)
	assert.True(t, z.ReadyForCleanup)
	assert.Equal(t, uint64(8), z.ReadyGeneration)
	require.NotNil(t, z.ReadyAt)
	z, err = s.MarkZoneReadyForCleanup(ctx, zone, 9)
	require.NoError(t, err, "idempotent")
	assert.Equal(t, uint64(8), z.ReadyGeneration, "the first proof stands")
	_, err = s.RebaseZoneExpunge(ctx, zone, 7, 10)
	assert.Error(t, err, "no rebase once ready for cleanup")

	sagas := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	require.NoError(t, s.RecordSagaReassignment(ctx, ledger.SagaReassignment{ZoneID: zone, AttemptID: att, NewOwner: owner, Sagas: sagas[:2]}))
	require.NoError(t, s.RecordSagaReassignment(ctx, ledger.SagaReassignment{ZoneID: zone, AttemptID: att, NewOwner: owner, Sagas: sagas[1:]}))
	require.NoError(t, s.RecordSagaReassignment(ctx, ledger.SagaReassignment{ZoneID: zone, AttemptID: att, NewOwner: owner}))
	got, err := s.ReassignedSagas(ctx, zone)
	require.NoError(t, err)
	assert.ElementsMatch(t, sagas, got)

	z, err = s.CompleteZoneExpunge(ctx, zone, len(got), owner)
	require.NoError(t, err)
	assert.True(t, z.Completed())
	assert.Equal(t, 3, z.SagasMoved)
	assert.Equal(t, owner, z.SagaNewOwner)
	z, err = s.CompleteZoneExpunge(ctx, zone, 99, uuid.New())
	require.NoError(t, err)
	assert.Equal(t, 3, z.SagasMoved, "the first commit stands")
}

func TestZoneExpungeRejectsIncompleteIntent(t *testing.T) {
	s := testenv.New(t).Store
	_, err := s.RecordZoneExpunge(context.Background(), ledger.ExpungeIntent{ZoneID: uuid.New(), SledID: uuid.New(), Kind: "nexus"})
	assert.Error(t, err)
}
