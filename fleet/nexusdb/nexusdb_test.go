package nexusdb_test

import (
	"context"
	"database/sql"
	"os"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/nexusdb"
	"github.com/fleetsaga/fleetsaga/fleetsim/domain"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// sagaDB returns a database holding fleetsim's (empty) saga table.
func sagaDB(t *testing.T) (string, *sql.DB) {
	t.Helper()
	env := testenv.New(t)
	// A sim without sleds creates the schema and runs no Nexus.
	d, err := sled.NewDomain(context.Background(), domain.Env{Spec: &spec.Spec{SpeedUp: 1}, DatabaseURL: env.DatabaseURL})
	require.NoError(t, err)
	require.NoError(t, d.Close())
	db, err := sql.Open("postgres", env.DatabaseURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return env.DatabaseURL, db
}

func insertSaga(t *testing.T, db *sql.DB, sec uuid.UUID, state string) uuid.UUID {
	t.Helper()
	id := uuid.New()
	_, err := db.Exec(`INSERT INTO omicron.saga (id, creator, name, saga_state, current_sec) VALUES ($1, $2, 'test', $3, $2)`, id, sec, state)
	require.NoError(t, err)
	return id
}

func TestReassignSagasMovesOnlyUnfinishedSagasOfThatNexus(t *testing.T) {
	ctx := context.Background()
	url, db := sagaDB(t)
	ndb, err := nexusdb.Open(fleet.FleetsimNexusDB(url))
	require.NoError(t, err)
	defer ndb.Close()

	from, to, other := uuid.New(), uuid.New(), uuid.New()
	moved := map[uuid.UUID]bool{
		insertSaga(t, db, from, "running"):   true,
		insertSaga(t, db, from, "running"):   true,
		insertSaga(t, db, from, "unwinding"): true,
	}
	done := insertSaga(t, db, from, "done")
	abandoned := insertSaga(t, db, from, "abandoned")
	others := insertSaga(t, db, other, "running")

	n, err := ndb.CountUnfinished(ctx, from)
	require.NoError(t, err)
	assert.Equal(t, int64(3), n)

	res, err := ndb.ReassignSagas(ctx, from, to)
	require.NoError(t, err)
	assert.Len(t, res.Sagas, 3)
	assert.Zero(t, res.Remaining)
	for _, id := range res.Sagas {
		assert.True(t, moved[id])
		var sec uuid.UUID
		var gen int
		var adopted bool
		require.NoError(t, db.QueryRow(`SELECT current_sec, adopt_generation, adopt_time IS NOT NULL FROM omicron.saga WHERE id = $1`, id).
			Scan(&sec, &gen, &adopted))
		assert.Equal(t, to, sec)
		assert.Equal(t, 2, gen)
		assert.True(t, adopted)
	}
	for _, id := range []uuid.UUID{done, abandoned} {
		var sec uuid.UUID
		var gen int
		require.NoError(t, db.QueryRow(`SELECT current_sec, adopt_generation FROM omicron.saga WHERE id = $1`, id).Scan(&sec, &gen))
		assert.Equal(t, from, sec, "finished sagas stay where they are")
		assert.Equal(t, 1, gen)
	}
	var sec uuid.UUID
	require.NoError(t, db.QueryRow(`SELECT current_sec FROM omicron.saga WHERE id = $1`, others).Scan(&sec))
	assert.Equal(t, other, sec)

	n, err = ndb.CountUnfinished(ctx, from)
	require.NoError(t, err)
	assert.Zero(t, n)
	n, err = ndb.CountUnfinished(ctx, to)
	require.NoError(t, err)
	assert.Equal(t, int64(3), n)

	// Idempotent: a retried activity moves nothing and bumps nothing.
	again, err := ndb.ReassignSagas(ctx, from, to)
	require.NoError(t, err)
	assert.Empty(t, again.Sagas)
	var maxGen int
	require.NoError(t, db.QueryRow(`SELECT max(adopt_generation) FROM omicron.saga`).Scan(&maxGen))
	assert.Equal(t, 2, maxGen)
}

func TestReassignSagasRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	url, _ := sagaDB(t)
	ndb, err := nexusdb.Open(fleet.FleetsimNexusDB(url))
	require.NoError(t, err)
	defer ndb.Close()
	a := uuid.New()
	_, err = ndb.ReassignSagas(ctx, a, a)
	assert.ErrorContains(t, err, "same Nexus")
	_, err = ndb.ReassignSagas(ctx, uuid.Nil, a)
	assert.Error(t, err)
	_, err = nexusdb.Open("")
	assert.Error(t, err)
	_, err = nexusdb.New(nil, "saga; DROP TABLE x")
	assert.Error(t, err)
	_, err = nexusdb.New(nil, "omicron.public.saga")
	assert.NoError(t, err)
}
