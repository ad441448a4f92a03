package mgsupdate

import (
	"fmt"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
)

// An MGS update kind is a component that the one driver (mgsUpdate.drive,
// driver.go) updates, in the shape of omicron's nexus/mgs-updates: the
// driver owns the attempt loop — precheck, start, wait, post-update,
// watching and taking over someone else's update, aborting ours — and a
// component (spFirmware, hostFlash) supplies only what differs: its
// prechecks and its post-update (omicron's SpComponentUpdateHelper).
type mgsComponent interface {
	// precheck reads the device and says whether the update is complete
	// or ready for an attempt. A precondition that does not hold is a
	// non-retryable error (WrongDevice, WouldDowngrade, …).
	precheck(ctx workflow.Context, when precheckWhen) (precheckStatus, error)
	// firmwareSlot is the slot the next start writes.
	firmwareSlot() uint16
	// postUpdate makes our complete update take effect (the SP: a reset;
	// the host: activate the slot, boot it). Past its point of no return
	// it finishes despite a cancel (mgsUpdate.cancelIgnored).
	postUpdate(ctx workflow.Context) (postUpdateStatus, error)
}

// mgsTakeover is a component that activates someone else's complete
// update when nobody does (the SP: reset onto it; the host flash: boot
// its slot when it holds our phase 1). activated false without an error:
// it declined, and the driver's start may write over that update.
type mgsTakeover interface {
	takeOver(ctx workflow.Context, foreign uuid.UUID) (activated bool, err error)
}

// precheckStatus is what a precheck found (omicron's PrecheckStatus).
type precheckStatus int

const (
	readyForUpdate precheckStatus = iota // an attempt of ours is needed
	updateComplete                       // the device runs the target
)

// precheckWhen says which precheck the driver asks for.
type precheckWhen int

const (
	// precheckFirst, before the first attempt: the artifacts are verified
	// and every expectation of the input is checked.
	precheckFirst precheckWhen = iota
	// precheckNextAttempt, before attempts 2..N: the inactive slot is not
	// checked, our earlier attempts wrote it.
	precheckNextAttempt
	// precheckAfterConcurrent: someone else's update ended; the device may
	// run the target now, or still need ours.
	precheckAfterConcurrent
)

// postUpdateStatus says whether our complete update took effect; when
// not (the device came back on something else), why, and the driver makes
// a new attempt.
type postUpdateStatus struct {
	activated bool
	why       string
}

var activated = postUpdateStatus{activated: true}

func notActivated(why string) postUpdateStatus { return postUpdateStatus{why: why} }

// readDevice is what a component's precheck reads: the SP's identity and
// the component's slots and update status, after verifying arts. With
// startThenWait it is a local activity: a few reads and an SP image's
// digest, done within the workflow task that then records the intent and
// starts the update.
func (u *mgsUpdate) readDevice(ctx workflow.Context, arts []Artifact) (PrecheckResult, error) {
	var pre PrecheckResult
	in := PrecheckInput{SP: u.sp, Component: u.component, Artifacts: arts, RackRelease: u.rackRelease}
	if u.startThenWait {
		lctx := workflow.WithLocalActivityOptions(ctx, u.localReadOpts("precheck"))
		return pre, workflow.ExecuteLocalActivity(lctx, mgsActs.MGSPrecheck, in).Get(ctx, &pre)
	}
	err := workflow.ExecuteActivity(u.shortOpts(ctx, "precheck"), mgsActs.MGSPrecheck, in).Get(ctx, &pre)
	return pre, err
}

// checkIdentity fails the update when the SP is not the one named, or when
// Nexus's MGS update driver owns it (checkOwner).
func checkIdentity(want SPTarget, pre PrecheckResult) error {
	if pre.Serial != want.Serial || (want.Part != "" && pre.Model != want.Part) {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("SP %s is serial %q part %q, expected serial %q part %q", want.id(), pre.Serial, pre.Model, want.Serial, want.Part),
			failure.WrongDevice, nil)
	}
	return checkOwner(want, pre)
}
