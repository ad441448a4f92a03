package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// BootImageChangeKind is what a boot image bump changes on a MachineSet.
type BootImageChangeKind string

const (
	// BootImageChangeImage: the boot image patch.
	BootImageChangeImage BootImageChangeKind = "image"
	// BootImageChangeScale: the canary scale-up.
	BootImageChangeScale BootImageChangeKind = "scale"
)

// BootImageChange is one change a boot image bump is about to make to a
// MachineSet, written before it makes it, with what undoes it: the image
// before the patch, or the replicas before the scale-up. A bump that was
// terminated never undid its changes; the next bump of the cluster adopts
// them (AdoptAbandonedBootImageChanges).
type BootImageChange struct {
	AttemptID  uuid.UUID           `json:"attemptId"`
	MachineSet string              `json:"machineSet"`
	Change     BootImageChangeKind `json:"change"`
	// Image: the MachineSet's image before the patch, and the one applied
	// (JSON: the ledger does not interpret images).
	PreviousImage json.RawMessage `json:"previousImage,omitempty"`
	AppliedImage  json.RawMessage `json:"appliedImage,omitempty"`
	// Scale: the replicas before the scale-up, and after it.
	PreviousReplicas int32 `json:"previousReplicas,omitempty"`
	ScaledReplicas   int32 `json:"scaledReplicas,omitempty"`
	// AdoptedFrom is the abandoned attempt that made the change (uuid.Nil:
	// this attempt made it).
	AdoptedFrom uuid.UUID `json:"adoptedFrom,omitempty"`
	RecordedAt  time.Time `json:"recordedAt"`
}

// RecordBootImageChange writes a change before it is made. An attempt has
// one row per MachineSet and kind: the first previous image or replicas
// stands (the original, also when the row was adopted), the applied image
// is the latest and the scaled replicas the most, so that one undo covers
// every change the attempt made or adopted.
func (s *Store) RecordBootImageChange(ctx context.Context, c BootImageChange) error {
	var prevImg, appliedImg, prevRep, scaledRep any
	switch c.Change {
	case BootImageChangeImage:
		if len(c.PreviousImage) == 0 || len(c.AppliedImage) == 0 {
			return fmt.Errorf("ledger: image change of %s needs the previous and the applied image", c.MachineSet)
		}
		prevImg, appliedImg = []byte(c.PreviousImage), []byte(c.AppliedImage)
	case BootImageChangeScale:
		prevRep, scaledRep = c.PreviousReplicas, c.ScaledReplicas
	default:
		return fmt.Errorf("ledger: unknown boot image change %q", c.Change)
	}
	_, err := s.db.ExecContext(ctx, `
		INSERT INTO bootimage_change (attempt_id, machine_set, change, previous_image, applied_image, previous_replicas, scaled_replicas)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (attempt_id, machine_set, change) DO UPDATE
		   SET applied_image = coalesce(EXCLUDED.applied_image, bootimage_change.applied_image),
		       scaled_replicas = greatest(bootimage_change.scaled_replicas, EXCLUDED.scaled_replicas)`,
		c.AttemptID, c.MachineSet, string(c.Change), prevImg, appliedImg, prevRep, scaledRep)
	if err != nil {
		return fmt.Errorf("ledger: record boot image change of %s: %w", c.MachineSet, err)
	}
	return nil
}

// AdoptAbandonedBootImageChanges makes the changes of the target's
// abandoned attempts before attempt (the run of them since the last attempt
// that ended otherwise: a terminated bump, and the terminated bumps that
// adopted its changes) attempt's own, and returns every change attempt has
// adopted, and those it recorded itself before (a run reset by an operator
// keeps its attempt: its changes from before the reset are its to undo).
// Per MachineSet and kind it keeps the oldest original (previous
// image or replicas), the newest applied image and the most replicas. A completed, failed or cancelled attempt ran its own ending:
// nothing before it is adopted. Adopting again is a no-op.
func (s *Store) AdoptAbandonedBootImageChanges(ctx context.Context, attempt uuid.UUID) ([]BootImageChange, error) {
	_, err := s.db.ExecContext(ctx, `
		WITH me AS (SELECT target, created_at FROM update_attempt WHERE id = $1),
		before AS (
			SELECT u.id, u.state, u.outcome, u.created_at FROM update_attempt u, me
			 WHERE u.target = me.target AND u.created_at < me.created_at AND u.id <> $1),
		since AS (
			SELECT coalesce(max(created_at), '-infinity') AS at FROM before
			 WHERE NOT (state = 'failed' AND outcome = 'abandoned')),
		dead AS (SELECT b.id FROM before b, since WHERE b.created_at > since.at),
		changes AS (
			SELECT c.*, coalesce(c.adopted_from, c.attempt_id) AS origin, o.created_at AS origin_at
			  FROM bootimage_change c
			  JOIN dead d ON d.id = c.attempt_id
			  JOIN update_attempt o ON o.id = coalesce(c.adopted_from, c.attempt_id)),
		oldest AS (
			SELECT DISTINCT ON (machine_set, change) * FROM changes
			 ORDER BY machine_set, change, origin_at, recorded_at),
		newest AS (
			SELECT DISTINCT ON (machine_set, change) * FROM changes
			 ORDER BY machine_set, change, origin_at DESC, recorded_at DESC)
		INSERT INTO bootimage_change (attempt_id, machine_set, change, previous_image, applied_image,
		                              previous_replicas, scaled_replicas, adopted_from)
		SELECT $1, o.machine_set, o.change, o.previous_image, n.applied_image, o.previous_replicas,
		       (SELECT max(x.scaled_replicas) FROM changes x WHERE x.machine_set = o.machine_set AND x.change = o.change),
		       o.origin
		  FROM oldest o JOIN newest n USING (machine_set, change)
		 ORDER BY o.machine_set, o.change
		ON CONFLICT (attempt_id, machine_set, change) DO NOTHING`, attempt)
	if err != nil {
		return nil, fmt.Errorf("ledger: adopt abandoned boot image changes: %w", err)
	}
	return s.BootImageChanges(ctx, attempt)
}

// BootImageChanges returns an attempt's changes, by MachineSet and kind.
func (s *Store) BootImageChanges(ctx context.Context, attempt uuid.UUID) ([]BootImageChange, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT attempt_id, machine_set, change, previous_image, applied_image, previous_replicas, scaled_replicas,
		       adopted_from, recorded_at
		  FROM bootimage_change WHERE attempt_id = $1 ORDER BY machine_set, change`, attempt)
	if err != nil {
		return nil, fmt.Errorf("ledger: boot image changes: %w", err)
	}
	defer rows.Close()
	var out []BootImageChange
	for rows.Next() {
		var c BootImageChange
		var change string
		var prevImg, appliedImg []byte
		var prevRep, scaledRep sql.NullInt32
		var from uuid.NullUUID
		if err := rows.Scan(&c.AttemptID, &c.MachineSet, &change, &prevImg, &appliedImg, &prevRep, &scaledRep, &from, &c.RecordedAt); err != nil {
			return nil, err
		}
		c.Change, c.PreviousImage, c.AppliedImage = BootImageChangeKind(change), prevImg, appliedImg
		c.PreviousReplicas, c.ScaledReplicas, c.AdoptedFrom = prevRep.Int32, scaledRep.Int32, from.UUID
		out = append(out, c)
	}
	return out, rows.Err()
}
