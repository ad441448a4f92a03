// Package nexusdb is fleetsaga's access to Nexus's database: the sled table
// (where each sled's sled-agent listens, which sleds a rack has) and the
// saga table (moving the unfinished sagas of an expunged Nexus to a live
// one, and counting what is left). Tables and columns are omicron's
// (omicron.public.saga, omicron.public.sled), named unqualified: a real
// rack's URL names database omicron (schema public); fleetsim's sets
// search_path=omicron (fleet.FleetsimNexusDB). The same SQL runs on both.
package nexusdb

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// DefaultTable is the saga table, resolved by the connection's database
// (omicron) or search_path (fleetsim: omicron).
const DefaultTable = "saga"

// SledTable is the sled table, resolved like DefaultTable.
const SledTable = "sled"

// unfinished is the SQL condition for a saga some Nexus must still drive.
const unfinished = "saga_state NOT IN ('done', 'abandoned')"

// DB is the saga table in a Nexus database.
type DB struct {
	db    *sql.DB
	table string
	sleds string
	owned bool
}

// Open connects to the Nexus database at url (lib/pq URL or DSN).
func Open(url string) (*DB, error) {
	if url == "" {
		return nil, errors.New("nexusdb: database URL is empty")
	}
	db, err := sql.Open("postgres", url)
	if err != nil {
		return nil, fmt.Errorf("nexusdb: open: %w", err)
	}
	db.SetMaxOpenConns(4)
	return &DB{db: db, table: DefaultTable, sleds: SledTable, owned: true}, nil
}

// New wraps an existing connection pool; table "" means DefaultTable.
func New(db *sql.DB, table string) (*DB, error) {
	if table == "" {
		table = DefaultTable
	}
	if !validTable.MatchString(table) {
		return nil, fmt.Errorf("nexusdb: invalid table name %q", table)
	}
	return &DB{db: db, table: table, sleds: SledTable}, nil
}

var validTable = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*){0,2}$`)

// Close closes the pool if Open created it.
func (d *DB) Close() error {
	if d.owned {
		return d.db.Close()
	}
	return nil
}

// Reassignment is the result of ReassignSagas.
type Reassignment struct {
	// Sagas are the IDs moved, in ID order.
	Sagas []uuid.UUID
	// Remaining is the count of unfinished sagas still on `from` after the
	// move, read in the same transaction (0 unless something is wrong).
	Remaining int64
}

// ReassignSagas moves every unfinished saga whose current_sec is from to to,
// bumping adopt_generation and setting adopt_time, and counts what is left on
// from, in one transaction. Repeating it is harmless: the second call finds
// nothing to move.
//
// Callers must only do this once `from` is proven gone (docs/CONFORMANCE.md §E): a
// running Nexus can claim new sagas right after.
func (d *DB) ReassignSagas(ctx context.Context, from, to uuid.UUID) (Reassignment, error) {
	var res Reassignment
	if from == uuid.Nil || to == uuid.Nil {
		return res, errors.New("nexusdb: reassign: from and to are required")
	}
	if from == to {
		return res, fmt.Errorf("nexusdb: reassign: from and to are the same Nexus %s", from)
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("nexusdb: reassign: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()

	// The UPDATE locks each row it moves; a concurrent claim that commits
	// after its snapshot is not moved, and the count below (a new snapshot
	// under READ COMMITTED) reports it.
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(
		`UPDATE %s SET current_sec = $2, adopt_generation = adopt_generation + 1, adopt_time = now()
		 WHERE current_sec = $1 AND %s RETURNING id`, d.table, unfinished), from, to)
	if err != nil {
		return res, fmt.Errorf("nexusdb: reassign: update: %w", err)
	}
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return res, fmt.Errorf("nexusdb: reassign: scan: %w", err)
		}
		res.Sagas = append(res.Sagas, id)
	}
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("nexusdb: reassign: %w", err)
	}
	rows.Close()
	if err := tx.QueryRowContext(ctx, fmt.Sprintf(
		`SELECT count(*) FROM %s WHERE current_sec = $1 AND %s`, d.table, unfinished), from).Scan(&res.Remaining); err != nil {
		return res, fmt.Errorf("nexusdb: reassign: verify: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Reassignment{}, fmt.Errorf("nexusdb: reassign: commit: %w", err)
	}
	sortUUIDs(res.Sagas)
	return res, nil
}

// CountUnfinished counts the sagas not done whose current_sec is sec.
func (d *DB) CountUnfinished(ctx context.Context, sec uuid.UUID) (int64, error) {
	var n int64
	err := d.db.QueryRowContext(ctx, fmt.Sprintf(
		`SELECT count(*) FROM %s WHERE current_sec = $1 AND %s`, d.table, unfinished), sec).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("nexusdb: count unfinished sagas of %s: %w", sec, err)
	}
	return n, nil
}

// UnfinishedSagas lists the sagas not done whose current_sec is sec, in ID order.
func (d *DB) UnfinishedSagas(ctx context.Context, sec uuid.UUID) ([]uuid.UUID, error) {
	rows, err := d.db.QueryContext(ctx, fmt.Sprintf(
		`SELECT id FROM %s WHERE current_sec = $1 AND %s ORDER BY id`, d.table, unfinished), sec)
	if err != nil {
		return nil, fmt.Errorf("nexusdb: unfinished sagas of %s: %w", sec, err)
	}
	defer rows.Close()
	var out []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("nexusdb: unfinished sagas of %s: %w", sec, err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// SagaOwners returns each given saga's current_sec (uuid.Nil: none) and
// whether it is unfinished. Sagas not in the table are left out.
func (d *DB) SagaOwners(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]SagaOwner, error) {
	out := map[uuid.UUID]SagaOwner{}
	if len(ids) == 0 {
		return out, nil
	}
	strs := make([]string, len(ids))
	for i, id := range ids {
		strs[i] = id.String()
	}
	rows, err := d.db.QueryContext(ctx, fmt.Sprintf(
		`SELECT id, current_sec, %s FROM %s WHERE id = ANY($1::uuid[])`, unfinished, d.table), pq.Array(strs))
	if err != nil {
		return nil, fmt.Errorf("nexusdb: saga owners: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var sec uuid.NullUUID
		var o SagaOwner
		if err := rows.Scan(&id, &sec, &o.Unfinished); err != nil {
			return nil, fmt.Errorf("nexusdb: saga owners: %w", err)
		}
		o.Sec = sec.UUID
		out[id] = o
	}
	return out, rows.Err()
}

// SagaOwner is a saga's current owner.
type SagaOwner struct {
	Sec        uuid.UUID
	Unfinished bool
}

func sortUUIDs(ids []uuid.UUID) {
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
}
