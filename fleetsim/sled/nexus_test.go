package sled_test

import (
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/nexusdb"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// nexusDB gives the test a fresh PostgreSQL database (testenv) and a pool on it.
func nexusDB(t *testing.T) (string, *sql.DB) {
	t.Helper()
	env := testenv.New(t)
	db, err := sql.Open("postgres", env.DatabaseURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return env.DatabaseURL, db
}

func count(t *testing.T, db *sql.DB, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(q, args...).Scan(&n), q)
	return n
}

// assertSagaInvariants: no saga claimed or finished twice, every done saga
// finished by its owner, every owned saga claimed or adopted by its owner.
func assertSagaInvariants(t *testing.T, db *sql.DB) {
	t.Helper()
	assert.Zero(t, count(t, db, `SELECT count(*) FROM (SELECT saga_id FROM fleetsim.saga_history
		WHERE event = 'claim' GROUP BY saga_id HAVING count(*) > 1) d`), "saga claimed twice")
	assert.Zero(t, count(t, db, `SELECT count(*) FROM (SELECT saga_id FROM fleetsim.saga_history
		WHERE event = 'finish' GROUP BY saga_id HAVING count(*) > 1) d`), "saga finished twice")
	assert.Zero(t, count(t, db, `SELECT count(*) FROM omicron.saga s WHERE saga_state = 'done' AND NOT EXISTS (
		SELECT 1 FROM fleetsim.saga_history h WHERE h.saga_id = s.id AND h.event = 'finish' AND h.sec = s.current_sec)`),
		"done saga without a finish by its owner")
	assert.Zero(t, count(t, db, `SELECT count(*) FROM omicron.saga s WHERE current_sec IS NOT NULL AND NOT EXISTS (
		SELECT 1 FROM fleetsim.saga_history h WHERE h.saga_id = s.id AND h.event IN ('claim', 'adopt') AND h.sec = s.current_sec)
		AND adopt_time IS NULL`), "owned saga never claimed by its owner")
}

func TestNexusInstancesClaimAndFinishSagas(t *testing.T) {
	url, db := nexusDB(t)
	s := rackSpec(t, []string{"internal_ntp", "nexus"}, []string{"nexus"})
	srv := startSim(t, s, url)
	a, b := s.Racks[0].Sleds[0].Zones[1].ID, s.Racks[0].Sleds[1].Zones[0].ID

	require.True(t, truth(t, srv).NexusEnabled)
	require.Eventually(t, func() bool {
		na, nb := nexusTruth(t, srv, a), nexusTruth(t, srv, b)
		return na.SagasClaimed >= 3 && nb.SagasClaimed >= 3 && na.SagasFinished >= 1 && nb.SagasFinished >= 1
	}, 10*time.Second, 20*time.Millisecond)

	for _, z := range []uuid.UUID{a, b} {
		n := nexusTruth(t, srv, z)
		assert.True(t, n.Running)
		assert.NotNil(t, n.LastClaimAt)
		assert.Empty(t, n.LastError)
		assert.Positive(t, count(t, db, `SELECT count(*) FROM omicron.saga WHERE creator = $1`, z))
		assert.Positive(t, count(t, db, `SELECT count(*) FROM fleetsim.saga_history WHERE sec = $1 AND event = 'claim'`, z))
	}
	assertSagaInvariants(t, db)

	// The claim history is append-only.
	_, err := db.Exec(`UPDATE fleetsim.saga_history SET sec = $1`, uuid.New())
	assert.ErrorContains(t, err, "append-only")
	_, err = db.Exec(`DELETE FROM fleetsim.saga_history`)
	assert.ErrorContains(t, err, "append-only")
}

// A Nexus whose zone failed to be removed is still running and keeps
// claiming sagas; it stops only when the zone is really gone, and never
// claims after that.
func TestRunningNexusKeepsClaimingUntilZoneRemoved(t *testing.T) {
	url, db := nexusDB(t)
	s := rackSpecMode(t, spec.SledAgentRemoveBeforeLedger, []string{"internal_ntp", "nexus"}, []string{"nexus"})
	srv := startSim(t, s, url)
	sl := s.Racks[0].Sleds[0]
	a, b := sl.Zones[1].ID, s.Racks[0].Sleds[1].Zones[0].ID
	c := client(t, srv, sl.ID)
	armFault(t, srv, faults.Fault{Kind: faults.ZoneRemovalFailure, Target: "zone/" + a.String(), Times: 3})
	next := inventory(t, c).LedgeredSledConfig.WithoutZone(4, a)

	for i := 0; i < 3; i++ {
		require.Error(t, c.PutOmicronConfig(ctx, next))
		failedAt := time.Now()
		// After the failed removal the Nexus is still claiming.
		require.Eventually(t, func() bool {
			n := nexusTruth(t, srv, a)
			return n.Running && n.LastClaimAt != nil && n.LastClaimAt.After(failedAt)
		}, 5*time.Second, 10*time.Millisecond, "attempt %d: nexus must keep claiming", i+1)
	}
	require.NoError(t, c.PutOmicronConfig(ctx, next))

	st := sledTruth(t, srv, sl.ID)
	removedAt, ok := st.RemovedAt[a]
	require.True(t, ok)
	assert.Equal(t, 4, st.RemovalAttempts[a])
	na := nexusTruth(t, srv, a)
	assert.False(t, na.Running)
	require.NotNil(t, na.StoppedAt)
	assert.False(t, na.StoppedAt.After(removedAt), "nexus stopped before the zone counted as removed")
	claimsAtRemoval := count(t, db, `SELECT count(*) FROM fleetsim.saga_history WHERE sec = $1`, a)

	// The other Nexus keeps going; the removed one never acts again.
	bBefore := nexusTruth(t, srv, b).SagasClaimed
	require.Eventually(t, func() bool { return nexusTruth(t, srv, b).SagasClaimed >= bBefore+5 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, claimsAtRemoval, count(t, db, `SELECT count(*) FROM fleetsim.saga_history WHERE sec = $1`, a))
	assert.Zero(t, count(t, db, `SELECT count(*) FROM fleetsim.saga_history WHERE sec = $1 AND at > $2`, a, removedAt))
	assert.Equal(t, na.SagasClaimed, nexusTruth(t, srv, a).SagasClaimed)
	assertSagaInvariants(t, db)
}

// Sagas reassigned to a live Nexus (current_sec = it, adopt_generation
// bumped) are adopted by it and finished; none is lost or run twice.
func TestNexusAdoptsReassignedSagas(t *testing.T) {
	url, db := nexusDB(t)
	s := rackSpec(t, []string{"internal_ntp", "nexus"}, []string{"nexus"})
	s.Timings.SagaRunTime.Duration = 100 * time.Second // 1 s: A's sagas outlive A
	srv := startSim(t, s, url)
	sl := s.Racks[0].Sleds[0]
	a, b := sl.Zones[1].ID, s.Racks[0].Sleds[1].Zones[0].ID
	ndb, err := nexusdb.Open(fleet.FleetsimNexusDB(url))
	require.NoError(t, err)
	t.Cleanup(func() { _ = ndb.Close() })

	require.Eventually(t, func() bool {
		n, err := ndb.CountUnfinished(ctx, a)
		return err == nil && n >= 3
	}, 10*time.Second, 10*time.Millisecond)
	c := client(t, srv, sl.ID)
	require.NoError(t, c.PutOmicronConfig(ctx, inventory(t, c).LedgeredSledConfig.WithoutZone(4, a)))
	awaitZoneGone(t, c, a, 4) // ledgered is not removed: inventory is the proof
	orphans, err := ndb.CountUnfinished(ctx, a)
	require.NoError(t, err)
	require.Positive(t, orphans, "the removed Nexus left unfinished sagas")

	res, err := ndb.ReassignSagas(ctx, a, b)
	require.NoError(t, err)
	assert.Len(t, res.Sagas, int(orphans))
	assert.Zero(t, res.Remaining)
	for _, id := range res.Sagas {
		var sec uuid.UUID
		var gen int
		require.NoError(t, db.QueryRow(`SELECT current_sec, adopt_generation FROM omicron.saga WHERE id = $1`, id).Scan(&sec, &gen))
		assert.Equal(t, b, sec)
		assert.Equal(t, 2, gen)
	}
	again, err := ndb.ReassignSagas(ctx, a, b)
	require.NoError(t, err)
	assert.Empty(t, again.Sagas, "reassigning twice moves nothing")

	// B adopts each moved saga once and finishes it.
	require.Eventually(t, func() bool {
		return count(t, db, `SELECT count(*) FROM omicron.saga WHERE id = ANY($1::uuid[]) AND saga_state = 'done'`, uuidArray(res.Sagas)) == len(res.Sagas)
	}, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, len(res.Sagas), count(t, db, `SELECT count(*) FROM fleetsim.saga_history
		WHERE saga_id = ANY($1::uuid[]) AND sec = $2 AND event = 'adopt' AND adopt_generation = 2`, uuidArray(res.Sagas), b))
	assert.Equal(t, len(res.Sagas), count(t, db, `SELECT count(*) FROM fleetsim.saga_history
		WHERE saga_id = ANY($1::uuid[]) AND sec = $2 AND event = 'finish'`, uuidArray(res.Sagas), b))
	assert.Positive(t, nexusTruth(t, srv, b).SagasAdopted)
	left, err := ndb.CountUnfinished(ctx, a)
	require.NoError(t, err)
	assert.Zero(t, left)
	assertSagaInvariants(t, db)
}

func uuidArray(ids []uuid.UUID) any {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	return pq.Array(s)
}
