package mgsupdate

import (
	"strconv"
	"time"

	"go.temporal.io/sdk/workflow"
)

// phase2WriteTimeout bounds sled-agent's write of phase 2 to a boot disk:
// about 1 GiB to an M.2, re-read and hashed, takes minutes; with Nexus
// owning the sled config the executor sends it within its 60 s period.
const phase2WriteTimeout = 30 * time.Minute

// mgsPreparer is a component with work to do on the device before each
// attempt starts its update (after the attempt's intent is in the ledger).
type mgsPreparer interface {
	prepare(ctx workflow.Context) error
}

// prepare has sled-agent put phase 2 on the disk the inactive slot boots
// from: phase 1 is written only once that disk holds its pair, so a reboot
// at any later point boots a whole OS (omicron's precheck waits for the
// same). The host's boot disk must be the active slot's. The activity
// signals the upload's progress at each tenth (progressWriter), so the
// progress query and current details move during it.
func (w *hostFlash) prepare(ctx workflow.Context) error {
	w.Phase(ctx, MGSPhaseHostPhase2)
	in := HostPhase2Input{
		Serial: w.serial, SledID: w.in.SledID, AttemptID: w.AttemptID(), ActiveSlot: w.active, Slot: w.slot,
		Phase2: w.in.Phase2, Deadline: workflow.Now(ctx).Add(phase2WriteTimeout), PollInterval: w.timing.PollInterval,
	}
	err := workflow.ExecuteActivity(w.longOpts(ctx, phase2WriteTimeout, "write phase 2 to the disk of slot "+strconv.Itoa(int(w.slot))), mgsActs.HostPhase2ToDisk, in).Get(ctx, nil)
	// The upload's byte count (its progress signals) is not phase 1's:
	// the delivery starts from nothing.
	w.report.Done, w.report.Total = 0, 0
	return err
}
