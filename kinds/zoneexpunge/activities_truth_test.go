package zoneexpunge_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// The ledger says the expunge is committed, but the sled
// still runs the Nexus zone (someone put it back, or the ledger is wrong).
// The device is the truth: the precheck stops with a clear conflict instead
// of letting the workflow report AlreadyExpunged over a running zone.
func TestPrecheckRefusesCommittedExpungeOverARunningZone(t *testing.T) {
	ctx := context.Background()
	f := newZoneFixture(t, true)
	f.expunge(t, f.nexusA, 4)
	_, err := f.env.Store.MarkZoneReadyForCleanup(ctx, f.nexusA, 4)
	require.NoError(t, err)
	_, err = f.env.Store.CompleteZoneExpunge(ctx, f.nexusA, 0, f.nexusB)
	require.NoError(t, err)

	_, err = f.tenv.ExecuteActivity(f.acts.PrecheckZoneExpunge, zoneexpunge.ZonePrecheckInput{
		UpdateID: f.updateID, Sled: f.sleds[0], Zone: f.nexusA})
	require.Error(t, err)
	assert.Equal(t, failure.ExpungeConflict, appErrType(err), "%v", err)
	assert.Contains(t, err.Error(), "still has it")
	n := func() sled.NexusTruth {
		for _, n := range f.sim.Truth()[sled.Name].(sled.Truth).Nexus {
			if n.ZoneID == f.nexusA {
				return n
			}
		}
		return sled.NexusTruth{}
	}()
	assert.True(t, n.Running, "the zone the ledger calls expunged is running")
}

// One sled of the rack that does not answer (registered in
// the sled table, its sled-agent down) must not fail the choice of a live
// saga owner on the other sleds.
func TestChooseSagaOwnerSkipsASledThatDoesNotAnswer(t *testing.T) {
	ctx := context.Background()
	f := newZoneFixture(t, true)
	db, err := sqlOpen(fleet.FleetsimNexusDB(f.env.DatabaseURL))
	require.NoError(t, err)
	defer db.Close()
	dead := uuid.New()
	_, err = db.ExecContext(ctx, `INSERT INTO sled (id, rack_id, is_scrimlet, serial_number, part_number, ip, port)
		SELECT $1, rack_id, false, 'DEAD', 'x', '127.0.0.1', 1 FROM sled WHERE id = $2`, dead, f.sleds[0])
	require.NoError(t, err)

	v, err := f.tenv.ExecuteActivity(f.acts.ChooseSagaOwner, zoneexpunge.ZoneOwnerInput{Sled: f.sleds[0], Zone: f.nexusA})
	require.NoError(t, err)
	var owner uuid.UUID
	require.NoError(t, v.Get(&owner))
	assert.Equal(t, f.nexusB, owner)

	// The zone's own sled stays strict: if it does not answer, nothing is decided.
	_, err = f.tenv.ExecuteActivity(f.acts.ChooseSagaOwner, zoneexpunge.ZoneOwnerInput{Sled: dead, Zone: f.nexusA})
	require.Error(t, err)
}

func sqlOpen(url string) (*sql.DB, error) { return sql.Open("postgres", url) }

// The chosen owner B was expunged (its intent recorded) before
// A's sagas moved: the move is refused with SagaOwnerGone and moves nothing,
// so the workflow chooses again instead of stranding the sagas on B.
func TestReassignRefusesAnOwnerExpungedBeforeTheMove(t *testing.T) {
	ctx := context.Background()
	f := newZoneFixture(t, true)
	require.Eventually(t, func() bool {
		n, err := f.acts.Nexus.CountUnfinished(ctx, f.nexusA)
		return err == nil && n > 0
	}, 10*time.Second, 10*time.Millisecond, "A holds sagas")
	f.expunge(t, f.nexusA, 4)
	_, err := f.env.Store.MarkZoneReadyForCleanup(ctx, f.nexusA, 4)
	require.NoError(t, err)
	_, err = f.env.Store.RecordZoneExpunge(ctx, ledger.ExpungeIntent{ZoneID: f.nexusB, SledID: f.sleds[1], Kind: "nexus", ExpungedAsOf: 4, AttemptID: f.attempt})
	require.NoError(t, err)

	_, err = f.tenv.ExecuteActivity(f.acts.ReassignNexusSagas, zoneexpunge.ZoneReassignInput{AttemptID: f.attempt, Zone: f.nexusA, NewOwner: f.nexusB})
	assert.Equal(t, failure.OwnerGone, appErrType(err), "%v", err)
	onB, err := f.acts.Nexus.UnfinishedSagas(ctx, f.nexusB)
	require.NoError(t, err)
	moved, err := f.env.Store.ReassignedSagas(ctx, f.nexusA)
	require.NoError(t, err)
	for _, id := range moved {
		assert.NotContains(t, onB, id, "a saga of A was moved onto expunged B")
	}
	left, err := f.acts.Nexus.CountUnfinished(ctx, f.nexusA)
	require.NoError(t, err)
	assert.Positive(t, left, "A's sagas are still A's, to be moved to a live Nexus")
}

// Found by chaos ("gives up on its sagas when sled-agents do not
// answer"): the only live Nexus is on a sled that does not answer. That is
// no proof that no live Nexus exists: the choice must be retried (a
// retryable error), and succeed once the sled answers again. NoLiveNexus
// is only for a rack whose sleds all answered without a live Nexus.
func TestChooseSagaOwnerRetriesWhileTheOwnersSledDoesNotAnswer(t *testing.T) {
	ctx := context.Background()
	f := newZoneFixture(t, true)
	db, err := sqlOpen(fleet.FleetsimNexusDB(f.env.DatabaseURL))
	require.NoError(t, err)
	defer db.Close()
	var port int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT port FROM sled WHERE id = $1`, f.sleds[1]).Scan(&port))
	_, err = db.ExecContext(ctx, `UPDATE sled SET port = 1 WHERE id = $1`, f.sleds[1])
	require.NoError(t, err)

	in := zoneexpunge.ZoneOwnerInput{Sled: f.sleds[0], Zone: f.nexusA}
	_, err = f.tenv.ExecuteActivity(f.acts.ChooseSagaOwner, in)
	require.Error(t, err)
	var app *temporal.ApplicationError
	assert.False(t, errors.As(err, &app) && app.NonRetryable(), "not answering is retried, not final: %v", err)
	assert.NotEqual(t, failure.NoLiveNexus, appErrType(err), "%v", err)
	assert.Contains(t, err.Error(), f.sleds[1].String(), "the error names the sled that did not answer")

	_, err = db.ExecContext(ctx, `UPDATE sled SET port = $2 WHERE id = $1`, f.sleds[1], port)
	require.NoError(t, err)
	v, err := f.tenv.ExecuteActivity(f.acts.ChooseSagaOwner, in)
	require.NoError(t, err)
	var owner uuid.UUID
	require.NoError(t, v.Get(&owner))
	assert.Equal(t, f.nexusB, owner)
}
