package workflows

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// SPFirmwareInput is one SP firmware update (DESIGN.md §3.1).
type SPFirmwareInput struct {
	SP       SPTarget `json:"sp"`
	Artifact Artifact `json:"artifact"`
	// ExpectedActive / ExpectedInactive, when set, must match the SP's
	// active and inactive versions (NoValidVersion: no valid image).
	ExpectedActive   string    `json:"expectedActive,omitempty"`
	ExpectedInactive string    `json:"expectedInactive,omitempty"`
	Timing           MGSTiming `json:"timing,omitzero"`
}

// SPFirmwareTarget is the ledger target of an SP ("sp/sled/12").
func SPFirmwareTarget(t mgs.SpType, slot uint16) string {
	return "sp/" + string(t) + "/" + strconv.Itoa(int(slot))
}

// Target implements UpdateInput.
func (in SPFirmwareInput) Target() string { return SPFirmwareTarget(in.SP.Type, in.SP.Slot) }

// ArtifactVersion implements UpdateInput.
func (in SPFirmwareInput) ArtifactVersion() string { return in.Artifact.Version }

// Validate implements UpdateInput.
func (in SPFirmwareInput) Validate() error {
	return errors.Join(in.SP.validate("sp-firmware sp"), validateArtifact("sp-firmware artifact", in.Artifact),
		in.Timing.validate("sp-firmware"))
}

// newVersionTimeout: an SP comes back within 60 s, a switch's within 120 s.
func (in SPFirmwareInput) newVersionTimeout() time.Duration {
	if in.SP.Type == mgs.SpTypeSwitch {
		return 120 * time.Second
	}
	return 60 * time.Second
}

// SPFirmwareUpdate updates one SP's firmware through MGS: verify the
// artifact, precheck (identity, versions, never roll back), then attempts
// until the SP runs the new version: intent in the ledger under a fresh
// UUID, start via any MGS, wait (one heartbeating activity), reset (via the
// other MGS if one refuses), wait for the new version. A concurrent update
// is watched, and taken over when it completes and nobody resets it.
func SPFirmwareUpdate(ctx workflow.Context, in SPFirmwareInput) (MGSUpdateResult, error) {
	if err := in.Validate(); err != nil {
		return MGSUpdateResult{}, temporal.NewNonRetryableApplicationError(err.Error(), failure.InvalidInput, nil)
	}
	u, err := newMGSUpdate(ctx, KindSPFirmware, in.Target(), in.SP.id(), mgs.ComponentSP, in.Artifact,
		in.Timing.withDefaults(in.newVersionTimeout()))
	if err != nil {
		return MGSUpdateResult{}, err
	}
	u.startThenWait = true
	ok, err := (&spFirmware{mgsUpdate: u, in: in}).run(ctx)
	return u.finish(ctx, ok, err)
}

type spFirmware struct {
	*mgsUpdate
	in SPFirmwareInput
}

func (w *spFirmware) run(ctx workflow.Context) (mgsEnding, error) {
	target := w.in.Artifact.Version

	// 1–2. Verify the artifact, then precheck the SP.
	pre, err := w.precheck(ctx, []Artifact{w.in.Artifact})
	if err != nil {
		return mgsEnding{}, err
	}
	w.result.PreviousVersion = slotVersion(pre.Active)
	if err := checkIdentity(w.in.SP, pre); err != nil {
		return mgsEnding{}, err
	}
	if pre.Active.Valid && pre.Active.Version == target {
		return noChangeNeeded, nil
	}
	if err := checkVersions(target, w.in.ExpectedActive, w.in.ExpectedInactive, pre); err != nil {
		return mgsEnding{}, err
	}

	why := ""
	for {
		// 3. A new attempt: fresh UUID, intent in the ledger first; from
		// the second on, the SP is prechecked again.
		if err := w.newAttempt(ctx, why); err != nil {
			return mgsEnding{}, err
		}
		if w.attempts > 1 {
			done, err := w.recheck(ctx)
			if err != nil {
				return mgsEnding{}, err
			}
			if done {
				return noChangeNeeded, nil
			}
		}
		outcome, upd, done, err := w.startOrWatch(ctx)
		if err != nil {
			return mgsEnding{}, err
		}
		if done {
			return mgsEnding{outcome, upd}, nil
		}

		// 4. Wait for our update on the SP.
		wr, err := w.wait(ctx, w.attemptID(), true)
		if err != nil {
			return mgsEnding{}, err
		}
		if wr.Outcome != activities.WaitComplete {
			why = waitReason(wr)
			continue
		}

		// 5. Reset and wait for the new version (lost replies handled).
		pr, err := w.postUpdateSP(ctx, w.attemptID(), target)
		if err != nil && isCancel(ctx, err) {
			pr, err = w.activateDespiteCancel(ctx, target)
		}
		if err != nil {
			return mgsEnding{}, err
		}
		if ctx.Err() != nil && pr.Outcome == activities.PostActivated {
			w.cancelCameLate()
		}
		if pr.Outcome == activities.PostActivated {
			// 6. Commit.
			return mgsEnding{MGSOutcomeCompletedUpdate, w.attemptID()}, nil
		}
		why = "update " + w.attemptID().String() + " complete but the SP came back running " + pr.Active
	}
}

// activateDespiteCancel finishes the reset a cancel interrupted. Our
// update is complete on the SP: it cannot be aborted, and left unactivated
// the next reset by anyone would activate it. So the activation is
// followed to its end and the cancel noted (under changeBookkeepingV3,
// whose post-update waits for a cancelled reset to stop first).
func (w *spFirmware) activateDespiteCancel(ctx workflow.Context, target string) (activities.PostUpdateResult, error) {
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	return w.postUpdateSP(dctx, w.attemptID(), target)
}

// cancelCameLate notes a cancel that arrived while our complete update was
// being activated (the reset finished before or after it).
func (w *spFirmware) cancelCameLate() {
	w.result.CancelIgnored = true
	w.note = "the cancel arrived after update " + w.attemptID().String() +
		" was complete on the SP: a complete update is not aborted, so the SP was reset to activate it"
}

// startOrWatch starts the current attempt, or — while someone else's
// update holds the SP — watches it. done reports that the SP reached the
// target through the concurrent update (outcome says how).
func (w *spFirmware) startOrWatch(ctx workflow.Context) (outcome string, upd uuid.UUID, done bool, err error) {
	for {
		sr, err := w.start(ctx, 0)
		if err != nil {
			return "", uuid.Nil, false, err
		}
		if sr.Started {
			return "", uuid.Nil, false, nil
		}
		how, foreign, err := w.watchConcurrent(ctx, sr.Current)
		if err != nil {
			return "", uuid.Nil, false, err
		}
		// Whatever ended the concurrent update, look at the SP again: it
		// may run the target now (then we are done), something newer
		// (never roll back), or still the old version (start ours).
		pre, err := w.precheck(ctx, nil)
		if err != nil {
			return "", uuid.Nil, false, err
		}
		if pre.Active.Valid && pre.Active.Version == w.in.Artifact.Version {
			if how == "took_over" {
				return MGSOutcomeTookOver, foreign, true, nil
			}
			return MGSOutcomeWaitedConcurrent, foreign, true, nil
		}
		if pre.Active.Valid && CompareVersions(pre.Active.Version, w.in.Artifact.Version) > 0 {
			return "", uuid.Nil, false, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("a concurrent update moved the SP to %s, newer than target %s: never roll back", pre.Active.Version, w.in.Artifact.Version),
				failure.WouldDowngrade, nil)
		}
	}
}

func waitReason(wr activities.WaitUpdateResult) string {
	switch wr.Outcome {
	case activities.WaitLost:
		return "update lost: the SP reports no update (it was reset mid-delivery)"
	case activities.WaitFailed:
		return "the SP reported " + wr.Status.String() + " (aborted)"
	case activities.WaitStuck:
		return fmt.Sprintf("no progress at %d/%d bytes within the progress timeout (aborted)", wr.Bytes, wr.Total)
	case activities.WaitAborted:
		return "the update was aborted by someone else"
	case activities.WaitReplaced:
		return "the SP now reports another update (" + wr.Status.String() + ")"
	}
	return "wait ended with " + wr.Outcome
}

// recheck is the precheck of attempts 2..N: the same SP, not already at
// the target (done), not newer, the active version still the expected
// one. The inactive slot is not checked: our earlier attempts wrote it.
func (w *spFirmware) recheck(ctx workflow.Context) (done bool, err error) {
	w.phase(ctx, MGSPhasePrecheck)
	pre, err := w.precheck(ctx, nil)
	if err != nil {
		return false, err
	}
	if err := checkIdentity(w.in.SP, pre); err != nil {
		return false, err
	}
	if pre.Active.Valid && pre.Active.Version == w.in.Artifact.Version {
		return true, nil
	}
	return false, checkVersions(w.in.Artifact.Version, w.in.ExpectedActive, "", pre)
}
