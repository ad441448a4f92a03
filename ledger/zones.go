package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
)

// Zone dispositions (table zone_disposition).
const (
	ZoneInService = "in_service"
	ZoneExpunged  = "expunged"
)

// ZoneDisposition is the ledger's record of one expunged zone.
type ZoneDisposition struct {
	ZoneID      uuid.UUID `json:"zoneId"`
	SledID      uuid.UUID `json:"sledId"`
	Kind        string    `json:"kind"`
	Disposition string    `json:"disposition"`
	// ExpungedAsOf is the sled config generation that first leaves the zone out.
	ExpungedAsOf uint64 `json:"expungedAsOf"`
	// ReadyForCleanup: inventory showed generation >= ExpungedAsOf ledgered
	// (ReadyGeneration) and the zone gone.
	ReadyForCleanup bool       `json:"readyForCleanup"`
	ReadyGeneration uint64     `json:"readyGeneration,omitempty"`
	ReadyAt         *time.Time `json:"readyAt,omitempty"`
	AttemptID       uuid.UUID  `json:"attemptId"`
	CompletedAt     *time.Time `json:"completedAt,omitempty"`
	SagasMoved      int        `json:"sagasMoved"`
	SagaNewOwner    uuid.UUID  `json:"sagaNewOwner,omitzero"`
}

// Completed reports whether the expunge committed.
func (z *ZoneDisposition) Completed() bool { return z.CompletedAt != nil }

// ErrZoneNotExpunged is returned for a zone the ledger has no expunge of.
var ErrZoneNotExpunged = errors.New("ledger: zone has no expunge record")

// ErrNotReadyForCleanup refuses a step that needs the inventory proof first.
var ErrNotReadyForCleanup = errors.New("ledger: zone is not ready for cleanup")

// ExpungeIntent is step 2 of a zone expunge.
type ExpungeIntent struct {
	ZoneID       uuid.UUID `json:"zoneId"`
	SledID       uuid.UUID `json:"sledId"`
	Kind         string    `json:"kind"`
	ExpungedAsOf uint64    `json:"expungedAsOf"`
	AttemptID    uuid.UUID `json:"attemptId"`
}

// RecordZoneExpunge marks the zone expunged as of in.ExpungedAsOf. If the
// zone is already expunged the existing record stands (an expunge is never
// undone, and a resumed expunge keeps its generation); the record is
// returned either way.
func (s *Store) RecordZoneExpunge(ctx context.Context, in ExpungeIntent) (*ZoneDisposition, error) {
	if in.ZoneID == uuid.Nil || in.SledID == uuid.Nil || in.Kind == "" || in.ExpungedAsOf < 1 || in.AttemptID == uuid.Nil {
		return nil, errors.New("ledger: zone expunge needs zone, sled, kind, generation >= 1 and attempt")
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("ledger: record zone expunge: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	// Waits for any saga move into this zone to end (MoveSagasTo holds the
	// shared lock); once this commits, no move into it starts.
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(`+sagaOwnerLockKey+`)`, in.ZoneID); err != nil {
		return nil, fmt.Errorf("ledger: record zone expunge: lock: %w", err)
	}
	_, err = tx.ExecContext(ctx, `
		INSERT INTO zone_disposition (zone_id, sled_id, zone_kind, disposition, expunged_as_of, attempt_id)
		VALUES ($1, $2, $3, 'expunged', $4, $5)
		ON CONFLICT (zone_id) DO UPDATE
		   SET disposition = 'expunged', expunged_as_of = EXCLUDED.expunged_as_of,
		       attempt_id = EXCLUDED.attempt_id, updated_at = now()
		 WHERE zone_disposition.disposition = 'in_service'`,
		in.ZoneID, in.SledID, in.Kind, int64(in.ExpungedAsOf), in.AttemptID)
	if err != nil {
		return nil, fmt.Errorf("ledger: record zone expunge: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("ledger: record zone expunge: %w", err)
	}
	z, err := s.ZoneDisposition(ctx, in.ZoneID)
	if err != nil {
		return nil, err
	}
	if z.SledID != in.SledID {
		return nil, fmt.Errorf("ledger: zone %s is recorded on sled %s, not %s", in.ZoneID, z.SledID, in.SledID)
	}
	return z, nil
}

// RebaseZoneExpunge moves a not-yet-ready expunge from generation from to
// generation to (someone ledgered a newer sled config that still has the
// zone). It is idempotent: a record already at to is left alone.
func (s *Store) RebaseZoneExpunge(ctx context.Context, zone uuid.UUID, from, to uint64) (*ZoneDisposition, error) {
	if to <= from {
		return nil, fmt.Errorf("ledger: rebase of zone %s must move to a newer generation (%d -> %d)", zone, from, to)
	}
	res, err := s.db.ExecContext(ctx, `
		UPDATE zone_disposition SET expunged_as_of = $3, updated_at = now()
		 WHERE zone_id = $1 AND disposition = 'expunged' AND NOT ready_for_cleanup AND expunged_as_of = $2`,
		zone, int64(from), int64(to))
	if err != nil {
		return nil, fmt.Errorf("ledger: rebase zone expunge: %w", err)
	}
	z, err := s.ZoneDisposition(ctx, zone)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 && z.ExpungedAsOf != to {
		return nil, fmt.Errorf("ledger: cannot rebase zone %s from generation %d: it is expunged as of %d (ready for cleanup: %v)",
			zone, from, z.ExpungedAsOf, z.ReadyForCleanup)
	}
	return z, nil
}

// MarkZoneReadyForCleanup records the inventory proof: the sled ledgered
// generation observed (>= ExpungedAsOf) with the zone gone. Idempotent.
func (s *Store) MarkZoneReadyForCleanup(ctx context.Context, zone uuid.UUID, observed uint64) (*ZoneDisposition, error) {
	_, err := s.db.ExecContext(ctx, `
		UPDATE zone_disposition
		   SET ready_for_cleanup = true, ready_generation = $2, ready_at = now(), updated_at = now()
		 WHERE zone_id = $1 AND disposition = 'expunged' AND NOT ready_for_cleanup AND expunged_as_of <= $2`,
		zone, int64(observed))
	if err != nil {
		return nil, fmt.Errorf("ledger: mark zone ready for cleanup: %w", err)
	}
	z, err := s.ZoneDisposition(ctx, zone)
	if err != nil {
		return nil, err
	}
	if !z.ReadyForCleanup {
		return nil, fmt.Errorf("ledger: zone %s is expunged as of %d; generation %d does not prove it gone", zone, z.ExpungedAsOf, observed)
	}
	return z, nil
}

// SagaReassignment records sagas moved (or about to be moved) off a zone.
type SagaReassignment struct {
	ZoneID    uuid.UUID   `json:"zoneId"`
	AttemptID uuid.UUID   `json:"attemptId"`
	NewOwner  uuid.UUID   `json:"newOwner"`
	Sagas     []uuid.UUID `json:"sagas"`
}

// RecordSagaReassignment adds sagas to the zone's reassignment record. It
// refuses a zone that is not ready for cleanup (the gate), and keeps the
// first record of each saga.
func (s *Store) RecordSagaReassignment(ctx context.Context, r SagaReassignment) error {
	z, err := s.ZoneDisposition(ctx, r.ZoneID)
	if err != nil {
		return err
	}
	if !z.ReadyForCleanup {
		return fmt.Errorf("%w: zone %s", ErrNotReadyForCleanup, r.ZoneID)
	}
	if len(r.Sagas) == 0 {
		return nil
	}
	ids := make([]string, len(r.Sagas))
	for i, id := range r.Sagas {
		ids[i] = id.String()
	}
	_, err = s.db.ExecContext(ctx, `
		INSERT INTO zone_saga_reassignment (zone_id, saga_id, attempt_id, new_owner)
		SELECT $1, unnest($2::uuid[]), $3, $4
		ON CONFLICT (zone_id, saga_id) DO NOTHING`,
		r.ZoneID, pq.Array(ids), r.AttemptID, r.NewOwner)
	if err != nil {
		return fmt.Errorf("ledger: record saga reassignment: %w", err)
	}
	return nil
}

// ReassignedSagas returns the sagas recorded as moved off zone.
func (s *Store) ReassignedSagas(ctx context.Context, zone uuid.UUID) ([]uuid.UUID, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT saga_id FROM zone_saga_reassignment WHERE zone_id = $1 ORDER BY saga_id`, zone)
	if err != nil {
		return nil, fmt.Errorf("ledger: reassigned sagas: %w", err)
	}
	defer rows.Close()
	var out []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// CompleteZoneExpunge commits the expunge (step 6). The first commit stands.
func (s *Store) CompleteZoneExpunge(ctx context.Context, zone uuid.UUID, sagasMoved int, newOwner uuid.UUID) (*ZoneDisposition, error) {
	var owner any
	if newOwner != uuid.Nil {
		owner = newOwner
	}
	_, err := s.db.ExecContext(ctx, `
		UPDATE zone_disposition
		   SET completed_at = now(), sagas_moved = $2, saga_new_owner = $3, updated_at = now()
		 WHERE zone_id = $1 AND ready_for_cleanup AND completed_at IS NULL`,
		zone, sagasMoved, owner)
	if err != nil {
		return nil, fmt.Errorf("ledger: complete zone expunge: %w", err)
	}
	z, err := s.ZoneDisposition(ctx, zone)
	if err != nil {
		return nil, err
	}
	if !z.Completed() {
		return nil, fmt.Errorf("%w: zone %s", ErrNotReadyForCleanup, zone)
	}
	return z, nil
}

const zoneColumns = `zone_id, sled_id, zone_kind, disposition, expunged_as_of, ready_for_cleanup,
	ready_generation, ready_at, attempt_id, completed_at, sagas_moved, saga_new_owner`

func scanZone(row interface{ Scan(...any) error }) (*ZoneDisposition, error) {
	var z ZoneDisposition
	var asOf, readyGen, moved sql.NullInt64
	var owner uuid.NullUUID
	if err := row.Scan(&z.ZoneID, &z.SledID, &z.Kind, &z.Disposition, &asOf, &z.ReadyForCleanup,
		&readyGen, &z.ReadyAt, &z.AttemptID, &z.CompletedAt, &moved, &owner); err != nil {
		return nil, err
	}
	z.ExpungedAsOf = uint64(asOf.Int64)
	z.ReadyGeneration = uint64(readyGen.Int64)
	z.SagasMoved = int(moved.Int64)
	z.SagaNewOwner = owner.UUID
	return &z, nil
}

// ZoneDisposition returns a zone's record, or ErrZoneNotExpunged.
func (s *Store) ZoneDisposition(ctx context.Context, zone uuid.UUID) (*ZoneDisposition, error) {
	z, err := scanZone(s.db.QueryRowContext(ctx, `SELECT `+zoneColumns+` FROM zone_disposition WHERE zone_id = $1`, zone))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", ErrZoneNotExpunged, zone)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: zone disposition: %w", err)
	}
	return z, nil
}

// ExpungedZones returns which of zones the ledger has expunged.
func (s *Store) ExpungedZones(ctx context.Context, zones []uuid.UUID) (map[uuid.UUID]bool, error) {
	ids := make([]string, len(zones))
	for i, id := range zones {
		ids[i] = id.String()
	}
	rows, err := s.db.QueryContext(ctx, `SELECT zone_id FROM zone_disposition
		WHERE zone_id = ANY($1::uuid[]) AND disposition = 'expunged'`, pq.Array(ids))
	if err != nil {
		return nil, fmt.Errorf("ledger: expunged zones: %w", err)
	}
	defer rows.Close()
	out := map[uuid.UUID]bool{}
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}

// sagaOwnerLockKey is the advisory lock of a Nexus zone as the target of a
// saga move ($1: the zone ID).
const sagaOwnerLockKey = `hashtextextended('fleetsaga.saga-owner:' || $1::text, 0)`

// ErrOwnerExpunged: the Nexus chosen to adopt sagas is expunged in the ledger.
var ErrOwnerExpunged = errors.New("ledger: the new saga owner is expunged")

// MoveSagasTo runs move (the saga move in Nexus's database) only while
// owner is not expunged, and keeps it so until move returns: it holds
// owner's lock shared, so RecordZoneExpunge(owner) waits for the move to
// end, and a move that starts after owner's expunge was recorded gets
// ErrOwnerExpunged. Sagas moved before owner's expunge are then moved on by
// owner's own expunge, which reassigns only after its intent.
func (s *Store) MoveSagasTo(ctx context.Context, owner uuid.UUID, move func(context.Context) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ledger: saga move: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock_shared(`+sagaOwnerLockKey+`)`, owner); err != nil {
		return fmt.Errorf("ledger: saga move: lock: %w", err)
	}
	var expunged bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM zone_disposition
		WHERE zone_id = $1 AND disposition = 'expunged')`, owner).Scan(&expunged); err != nil {
		return fmt.Errorf("ledger: saga move: %w", err)
	}
	if expunged {
		return fmt.Errorf("%w: %s", ErrOwnerExpunged, owner)
	}
	if err := move(ctx); err != nil {
		return err
	}
	return tx.Commit()
}
