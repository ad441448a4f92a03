package bootimage

import (
	"fmt"

	"github.com/google/uuid"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// adoptAbandoned takes the changes of the bumps of this cluster that were
// terminated before this one (their attempts released as abandoned when
// this one's intent was written) and registers their undo first, so that a
// failed canary or a cancel of this run undoes them last, after this run's
// own changes: back to the original image and replicas. Each undo is safe
// when the change never happened (the row is written before the action).
// A cancel does not stop the adoption: the rows may already be this
// attempt's, and the cancel must undo them.
func (b *bootImageBump) adoptAbandoned(ctx workflow.Context) error {
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	var changes []BootImageChange
	if err := workflow.ExecuteActivity(workflows.LedgerOptions(dctx), bumpActs.AdoptBootImageChanges, b.attemptID).Get(dctx, &changes); err != nil {
		return err
	}
	for _, c := range changes {
		from := "from " + c.AdoptedFrom.String()
		if c.AdoptedFrom == uuid.Nil {
			from = "this attempt's, before a reset"
		}
		b.result.Adopted = append(b.result.Adopted, fmt.Sprintf("%s %s (%s)", c.MachineSet, c.Change, from))
		switch c.Change {
		case ledger.BootImageChangeImage:
			b.adoptedImages = append(b.adoptedImages, c.MachineSet)
			b.life.BeforeAction("restore boot image of "+c.MachineSet+" (adopted)", func(ctx workflow.Context) error {
				return b.restoreImage(ctx, c.MachineSet, c.Previous, c.Applied)
			})
		case ledger.BootImageChangeScale:
			b.adoptedScales = append(b.adoptedScales, c)
			b.life.BeforeAction("scale "+c.MachineSet+" back down (adopted)", func(ctx workflow.Context) error {
				return b.undoAdoptedScale(ctx, c)
			})
		}
	}
	if len(changes) > 0 {
		b.event(ctx, "adopted", "running", fmt.Sprintf("adopted %d change(s) of abandoned bumps into the rollback", len(changes)))
	}
	return nil
}

// undoAdoptedScale scales an abandoned bump's canary MachineSet back to
// its replicas before it, from anything up to what the scale-ups left.
func (b *bootImageBump) undoAdoptedScale(ctx workflow.Context, c BootImageChange) error {
	return b.scaleDown(ctx, BootImageScaleInput{
		Cluster: b.in.Cluster, MachineSet: c.MachineSet, From: c.ScaledReplicas, To: c.PreviousReplicas, Down: true,
	})
}

// releaseAdoptedCanaries scales the abandoned bumps' canaries back down once
// this run no longer rolls back: a canary was a proof, not capacity. A
// failure is reported, not fatal (the images are proven).
func (b *bootImageBump) releaseAdoptedCanaries(ctx workflow.Context) {
	for _, c := range b.adoptedScales {
		_ = b.undoAdoptedScale(ctx, c)
	}
}

// recordChange writes a change to the ledger before it is made, so that a
// later bump can adopt it if this one is terminated. It returns the row as
// it stands: its previous image or replicas are the original, also when a
// run reset by an operator makes a change its attempt already made.
func (b *bootImageBump) recordChange(ctx workflow.Context, c BootImageChange) (BootImageChange, error) {
	c.AttemptID = b.attemptID
	var stored BootImageChange
	err := workflow.ExecuteActivity(workflows.LedgerOptions(ctx), bumpActs.RecordBootImageChange, c).Get(ctx, &stored)
	return stored, err
}

// undoRecorded undoes, after the rollback's own undos, every change the
// ledger holds for this attempt: a run reset by an operator does not hold
// in memory what its attempt did before the reset (a MachineSet it patched
// then is planned as up to date now). Each undo acts only on a MachineSet
// still as the change left it, so what the rollback already undid is left
// alone; only what this sweep restores is reported.
func (b *bootImageBump) undoRecorded(ctx workflow.Context) error {
	var changes []BootImageChange
	if err := workflow.ExecuteActivity(workflows.LedgerOptions(ctx), bumpActs.BootImageChanges, b.attemptID).Get(ctx, &changes); err != nil {
		return err
	}
	var a *BootImageActivities
	for _, c := range changes {
		switch c.Change {
		case ledger.BootImageChangeImage:
			var out string
			err := workflow.ExecuteActivity(bumpAPIOptions(ctx, "restore boot image of "+c.MachineSet+" (ledger)"), a.RestoreBootImage,
				BootImageRestoreInput{Cluster: b.in.Cluster, MachineSet: c.MachineSet, Previous: c.Previous, Applied: c.Applied}).Get(ctx, &out)
			if err == nil && out == RestoreDone {
				b.result.Restored = append(b.result.Restored, c.MachineSet+": "+out+" (changed before a reset)")
			}
		case ledger.BootImageChangeScale:
			_ = workflow.ExecuteActivity(b.bumpChangeOptions(ctx, fmt.Sprintf("scale %s back to %d (ledger)", c.MachineSet, c.PreviousReplicas)),
				a.ScaleMachineSet, BootImageScaleInput{
					Cluster: b.in.Cluster, MachineSet: c.MachineSet, From: c.ScaledReplicas, To: c.PreviousReplicas, Down: true,
				}).Get(ctx, nil)
		}
	}
	return nil
}

// scaleDown undoes a canary scale-up and notes the outcome.
func (b *bootImageBump) scaleDown(ctx workflow.Context, in BootImageScaleInput) error {
	var a *BootImageActivities
	err := workflow.ExecuteActivity(b.bumpChangeOptions(ctx, fmt.Sprintf("scale %s %d -> %d", in.MachineSet, in.From, in.To)), a.ScaleMachineSet, in).Get(ctx, nil)
	msg := fmt.Sprintf("%s: scaled back to %d", in.MachineSet, in.To)
	if err != nil {
		msg = in.MachineSet + ": scale down failed: " + failure.Line(err)
	}
	b.result.Restored = append(b.result.Restored, msg)
	return err
}

// adoptedCanary is the canary of a run that patched nothing itself but
// adopted patches never proven: the first adopted MachineSet now on the
// golden image ("" when there is none).
func (b *bootImageBump) adoptedCanary() string {
	for _, name := range b.adoptedImages {
		if contains(b.result.UpToDate, name) {
			return name
		}
	}
	return ""
}

// bumpActs names the boot image activities the workflow calls.
var bumpActs *BootImageActivities
