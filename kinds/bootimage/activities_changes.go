package bootimage

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/machineapi"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// BootImageChange is one change of a MachineSet by a boot image bump, with
// what undoes it (the ledger's row, with typed images).
type BootImageChange struct {
	AttemptID  uuid.UUID                  `json:"attemptId"`
	MachineSet string                     `json:"machineSet"`
	Change     ledger.BootImageChangeKind `json:"change"`
	// Image: before the patch, and applied.
	Previous machineapi.BootImage `json:"previous"`
	Applied  machineapi.BootImage `json:"applied"`
	// Scale: replicas before the canary scale-up, and after it.
	PreviousReplicas int32 `json:"previousReplicas,omitempty"`
	ScaledReplicas   int32 `json:"scaledReplicas,omitempty"`
	// AdoptedFrom is the abandoned attempt that made the change.
	AdoptedFrom uuid.UUID `json:"adoptedFrom,omitempty"`
}

// RecordBootImageChange writes a change before the bump makes it (the
// first row of an attempt for a MachineSet and kind stands) and returns
// the row as it stands: a run reset by an operator may be making again a
// change its attempt already made, and must undo it to the original.
func (a *BootImageActivities) RecordBootImageChange(ctx context.Context, c BootImageChange) (BootImageChange, error) {
	row := ledger.BootImageChange{AttemptID: c.AttemptID, MachineSet: c.MachineSet, Change: c.Change,
		PreviousReplicas: c.PreviousReplicas, ScaledReplicas: c.ScaledReplicas}
	if c.Change == ledger.BootImageChangeImage {
		var err error
		if row.PreviousImage, err = json.Marshal(c.Previous); err != nil {
			return c, temporal.NewNonRetryableApplicationError(err.Error(), failure.BootImageInvalid, err)
		}
		if row.AppliedImage, err = json.Marshal(c.Applied); err != nil {
			return c, temporal.NewNonRetryableApplicationError(err.Error(), failure.BootImageInvalid, err)
		}
	}
	if err := a.Store.RecordBootImageChange(ctx, row); err != nil {
		return c, err
	}
	all, err := a.BootImageChanges(ctx, c.AttemptID)
	for _, s := range all {
		if s.MachineSet == c.MachineSet && s.Change == c.Change {
			return s, err
		}
	}
	return c, err
}

// BootImageChanges are the changes an attempt recorded or adopted.
func (a *BootImageActivities) BootImageChanges(ctx context.Context, attempt uuid.UUID) ([]BootImageChange, error) {
	rows, err := a.Store.BootImageChanges(ctx, attempt)
	if err != nil {
		return nil, err
	}
	return typedChanges(rows)
}

// AdoptBootImageChanges makes the changes of the cluster's abandoned bumps
// (terminated runs, which never undid them) changes of attempt, and returns
// them for its rollback.
func (a *BootImageActivities) AdoptBootImageChanges(ctx context.Context, attempt uuid.UUID) ([]BootImageChange, error) {
	rows, err := a.Store.AdoptAbandonedBootImageChanges(ctx, attempt)
	if err != nil {
		return nil, err
	}
	return typedChanges(rows)
}

// typedChanges decodes the ledger's rows (images are JSON there).
func typedChanges(rows []ledger.BootImageChange) ([]BootImageChange, error) {
	out := make([]BootImageChange, 0, len(rows))
	for _, r := range rows {
		c := BootImageChange{AttemptID: r.AttemptID, MachineSet: r.MachineSet, Change: r.Change,
			PreviousReplicas: r.PreviousReplicas, ScaledReplicas: r.ScaledReplicas, AdoptedFrom: r.AdoptedFrom}
		if r.Change == ledger.BootImageChangeImage {
			if err := json.Unmarshal(r.PreviousImage, &c.Previous); err != nil {
				return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s: recorded previous image: %v", r.MachineSet, err), failure.BootImageMalformed, err)
			}
			if err := json.Unmarshal(r.AppliedImage, &c.Applied); err != nil {
				return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s: recorded applied image: %v", r.MachineSet, err), failure.BootImageMalformed, err)
			}
		}
		out = append(out, c)
	}
	return out, nil
}
