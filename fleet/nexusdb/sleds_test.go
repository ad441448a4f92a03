package nexusdb_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/nexusdb"
)

// A sled taken out and put back is two rows with one serial: serials are
// unique only among sleds not decommissioned (the index
// commissioned_sled_uniqueness in omicron schema/crdb/dbinit.sql), and a
// decommissioned row keeps time_deleted NULL. The lookup by serial finds the
// commissioned row, and refuses to guess between two of them.
func TestSledBySerialSkipsDecommissionedSleds(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: PostgreSQL")
	}
	url, db := sagaDB(t)
	old, live := uuid.New(), uuid.New()
	rack := uuid.New()
	insertSled(t, db, old, rack, "BRM42220001", "913-0000019", "decommissioned")
	insertSled(t, db, live, rack, "BRM42220001", "913-0000019", "active")

	ndb, err := nexusdb.Open(fleet.FleetsimNexusDB(url))
	require.NoError(t, err)
	defer ndb.Close()
	s, err := ndb.SledBySerial(context.Background(), "BRM42220001")
	require.NoError(t, err)
	assert.Equal(t, live, s.ID, "the decommissioned row was taken for the sled")

	insertSled(t, db, uuid.New(), rack, "BRM42220001", "913-0000023", "active")
	_, err = ndb.SledBySerial(context.Background(), "BRM42220001")
	require.ErrorIs(t, err, nexusdb.ErrAmbiguousSerial)
	assert.Contains(t, err.Error(), "have serial BRM42220001")
}

func insertSled(t *testing.T, db *sql.DB, id, rack uuid.UUID, serial, part, state string) {
	t.Helper()
	_, err := db.Exec(`INSERT INTO omicron.sled (id, rack_id, is_scrimlet, serial_number, part_number, ip, port, sled_state)
		VALUES ($1, $2, false, $3, $4, '::1', 12345, $5)`, id, rack, serial, part, state)
	require.NoError(t, err)
}
