package mgsupdate

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// --- start ---

// StartUpdateInput starts one attempt: the update ID is the attempt's UUID
// (already in the ledger).
type StartUpdateInput struct {
	SP           mgs.SpIdentifier `json:"sp"`
	Component    string           `json:"component"`
	FirmwareSlot uint16           `json:"firmwareSlot"`
	UpdateID     uuid.UUID        `json:"updateId"`
	Artifact     ArtifactRef      `json:"artifact"`
	// PollInterval paces retries while the SP updates another component.
	PollInterval time.Duration `json:"pollInterval"`
	// RackRelease: right before the image is sent, the SP's rack's target
	// release is read, and one refuses the send (refuseBeforeSend).
	RackRelease bool `json:"rackRelease,omitempty"`
	// ThenWait, when set, makes an accepted start go on to the first leg
	// of the wait for it (MGSWaitUpdate's), in the same activity.
	ThenWait *WaitUpdateInput `json:"thenWait,omitempty"`
}

// StartUpdateResult says whether our update started, or who is busy.
type StartUpdateResult struct {
	// UpdateID is the update the start was asked for (the workflow
	// rejects a result that names another: results.go).
	UpdateID uuid.UUID `json:"updateId"`
	// Started: our update was sent, by this run or an earlier one of the
	// same attempt; Wait says what became of it when it is already known.
	Started bool   `json:"started"`
	MGS     string `json:"mgs,omitempty"`
	// Busy: another update holds the SP; Current is its status.
	Busy    bool             `json:"busy"`
	Current mgs.UpdateStatus `json:"current"`
	// Wait is the first leg of the wait (ThenWait), or the end of an
	// update sent by an earlier run and gone from the SP (lost or
	// replaced, with or without ThenWait); nil when not started.
	Wait *WaitUpdateResult `json:"wait,omitempty"`
}

// MGSStartUpdate sends the image (startUpdate) and, with ThenWait, waits
// for the accepted update: one activity task where there were two. Each
// send is recorded in the ledger before MGS is asked (sendLog), and a run
// that finds a send of this attempt that may have reached the SP never
// sends again: it asks MGS (resumeSent). Every run reads the record, a
// first one too: a workflow reset runs the start again under the same
// attempt ID.
func (a *MGSActivities) MGSStartUpdate(ctx context.Context, in StartUpdateInput) (StartUpdateResult, error) {
	sends, err := a.sendsOf(ctx, in.UpdateID)
	if err != nil {
		return StartUpdateResult{}, err
	}
	var out StartUpdateResult
	if sends.open() {
		out, err = a.resumeSent(ctx, in, sends.last)
	} else {
		out, err = a.startUpdate(ctx, in, sends.sent+1)
	}
	out.UpdateID = in.UpdateID
	if err != nil || !out.Started || out.Wait != nil || in.ThenWait == nil {
		return out, err
	}
	activity.RecordHeartbeat(ctx, WaitHeartbeat{State: "accepted"})
	return a.thenWait(ctx, out, *in.ThenWait)
}

func (a *MGSActivities) thenWait(ctx context.Context, out StartUpdateResult, w WaitUpdateInput) (StartUpdateResult, error) {
	wr, err := a.MGSWaitUpdate(ctx, w)
	if err != nil {
		return out, err
	}
	out.Wait = &wr
	return out, nil
}

// resumeSent: an earlier run sent this attempt's update, and it may have
// reached the SP (sent). MGS says what became of it: still ours on the SP
// (started: the wait follows it), or gone — the SP never took it or lost
// it in a reset, or holds another update now. Then the attempt is lost:
// it is not sent again (that would be a second delivery of one attempt);
// the result's Wait says lost or replaced, which the workflow's attempt
// loop answers with a new attempt under a new ID.
func (a *MGSActivities) resumeSent(ctx context.Context, in StartUpdateInput, sent ledger.Event) (StartUpdateResult, error) {
	set, err := a.set()
	if err != nil {
		return StartUpdateResult{}, err
	}
	cur, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.UpdateStatus, error) {
		return c.UpdateStatus(ctx, in.SP, in.Component)
	})
	if err != nil {
		return StartUpdateResult{}, mgsErr(err, "read update status")
	}
	out := StartUpdateResult{Started: true, Current: cur}
	if cur.State != mgs.UpdateNone && cur.ID == in.UpdateID {
		return out, nil
	}
	gone := WaitUpdateResult{UpdateID: in.UpdateID, Outcome: WaitLost, Status: cur}
	if cur.State != mgs.UpdateNone {
		gone.Outcome = WaitReplaced
	}
	out.Wait = &gone
	a.event(ctx, in.UpdateID, "lost", string(ledger.StateFailed), fmt.Sprintf(
		"update %s was sent by %s at %s (%s) and the SP now reports %s: it never arrived or the SP lost it; not sent again",
		in.UpdateID, sent.Worker, sent.At.UTC().Format(time.RFC3339), sent.Step, cur))
	return out, nil
}

// startUpdate sends the image through any reachable MGS (failing over on
// transport errors), as send n of the attempt, recorded before MGS is
// asked. 503 UpdateInProgress for someone else's update is not an error:
// the result says Busy, and the refusal is recorded (the SP never took
// ours, so the next start of this attempt may send it).
func (a *MGSActivities) startUpdate(ctx context.Context, in StartUpdateInput, n int) (StartUpdateResult, error) {
	var out StartUpdateResult
	set, err := a.set()
	if err != nil {
		return out, err
	}
	status := func() (mgs.UpdateStatus, error) {
		return mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.UpdateStatus, error) {
			return c.UpdateStatus(ctx, in.SP, in.Component)
		})
	}
	cur, err := status()
	if err != nil {
		return out, mgsErr(err, "read update status")
	}
	if cur.State != mgs.UpdateNone && cur.ID == in.UpdateID {
		out.Started, out.Current = true, cur
		return out, nil
	}
	// Someone else's complete host flash update is not in the way: the
	// SP takes ours over it (omicron sp-sim/src/update.rs,
	// component_update_prepare, refuses over a complete update only for
	// the SP itself), and omicron's driver watches another update only
	// when its start fails "update still in progress"
	// (nexus/mgs-updates/src/driver_update.rs, apply_update). An SP
	// firmware start over a complete one gets the SP's refusal, below.
	if in.PollInterval <= 0 {
		in.PollInterval = 3 * time.Second
	}
	if err := a.refuseBeforeSend(ctx, set, in); err != nil {
		return out, err
	}
	if err := a.recordSending(ctx, in, n); err != nil {
		return out, err
	}
	var mu sync.Mutex
	var digest string
	send := func() (*mgs.Client, error) {
		_, c, err := mgs.TryAllFrom(ctx, set, func(ctx context.Context, c *mgs.Client) (struct{}, error) {
			rc, size, err := a.openArtifact(ctx, in.Artifact)
			if err != nil {
				return struct{}{}, err
			}
			defer rc.Close()
			sum := sha256.New()
			err = c.UpdateStart(ctx, in.SP, in.Component, in.UpdateID, in.FirmwareSlot,
				io.TeeReader(heartbeatReader(ctx, rc), sum), size)
			mu.Lock()
			digest = hex.EncodeToString(sum.Sum(nil))
			mu.Unlock()
			return struct{}{}, err
		})
		return c, err
	}
	c, err := send()
	// Today's MGS answers an SP refusal (another component updating, say)
	// with an ambiguous 503: the SP's state decides what it meant.
	// resentOnce: the other component's update may end between the SP's
	// refusal and our read of it; the send is tried once more before the
	// refusal is handed to the activity's retry.
	resentOnce := false
	for mgs.Ambiguous(err) {
		cur, serr := status()
		if serr != nil {
			return out, mgsErr(serr, "read update status after an ambiguous start")
		}
		switch mgs.StartVerdict(cur, in.UpdateID) {
		case mgs.VerdictOurs:
			out.Started, out.Current = true, cur
			a.event(ctx, in.UpdateID, "start", string(ledger.StateRunning), "update "+in.UpdateID.String()+" found on the SP after an ambiguous answer")
			return out, nil
		case mgs.VerdictBusy:
			out.Busy, out.Current = true, cur
			return out, a.recordRefused(ctx, in.UpdateID, n, "the SP is busy with update "+cur.String()+": ours was not taken")
		}
		if mgs.ArchiveRefused(err) {
			// The SP holds nothing of ours (re-read above): it refused the
			// image itself, and would refuse it at every attempt.
			if rerr := a.recordRefused(ctx, in.UpdateID, n, "the SP refused the image for good"); rerr != nil {
				return out, rerr
			}
			return out, mgsFatal(failure.ImageRefused, "the SP refused the image: %s", mgs.MessageOf(err))
		}
		other, berr := a.otherComponentBusy(ctx, set, in.SP, in.Component)
		if berr != nil {
			return out, berr
		}
		if other == "" && resentOnce {
			return out, mgsErr(err, "start update") // transient: retried
		}
		resentOnce = resentOnce || other == ""
		// The SP updates another component (one at a time): wait here,
		// with heartbeats, rather than in the workflow.
		activity.RecordHeartbeat(ctx, WaitHeartbeat{State: "other-component-busy: " + cmp.Or(other, "just ended")})
		if err := activities.SleepCtx(ctx, in.PollInterval); err != nil {
			return out, err
		}
		if rerr := a.refuseBeforeSend(ctx, set, in); rerr != nil {
			// Send n never reached the SP (it was busy): close its record
			// (if that fails, the start is retried and checks again).
			if err := a.recordRefused(ctx, in.UpdateID, n, "not sent again: the rack has a target release"); err != nil {
				return out, err
			}
			return out, rerr
		}
		c, err = send()
	}
	switch {
	case err == nil:
		if !strings.EqualFold(digest, in.Artifact.SHA256) {
			// The file changed after it was verified: take it back.
			_ = set.Do(ctx, func(ctx context.Context, c *mgs.Client) error {
				return c.UpdateAbort(ctx, in.SP, in.Component, in.UpdateID)
			})
			return out, mgsFatal(failure.ArtifactMismatch, "artifact %s changed while it was sent: SHA-256 %s, expected %s", in.Artifact.where(), digest, in.Artifact.SHA256)
		}
		out.Started, out.MGS = true, c.BaseURL()
		// Informational: what a retry trusts is the send's record.
		a.event(ctx, in.UpdateID, "start", string(ledger.StateRunning), "update "+in.UpdateID.String()+" accepted by "+c.BaseURL())
		pw := progressWriter{a: a, attempt: in.UpdateID}
		pw.write(ctx, "updating", 0, 0, true)
		return out, nil
	case mgs.Classify(err) == mgs.ClassBusy:
		cur, serr := status()
		if serr != nil {
			return out, mgsErr(serr, "read update status")
		}
		if cur.State != mgs.UpdateNone && cur.ID == in.UpdateID {
			out.Started, out.Current = true, cur
			return out, nil
		}
		out.Busy, out.Current = true, cur
		return out, a.recordRefused(ctx, in.UpdateID, n, "MGS refused: the SP is busy with update "+cur.String())
	}
	return out, mgsErr(err, "start update")
}

// otherComponentBusy names the other component whose update the SP is
// working on ("" if none): the SP takes one component at a time.
func (a *MGSActivities) otherComponentBusy(ctx context.Context, set *mgs.Set, sp mgs.SpIdentifier, comp string) (string, error) {
	for _, other := range []string{mgs.ComponentSP, mgs.ComponentHostBootFlash} {
		if other == comp || (sp.Type != mgs.SpTypeSled && other == mgs.ComponentHostBootFlash) {
			continue
		}
		st, err := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.UpdateStatus, error) {
			return c.UpdateStatus(ctx, sp, other)
		})
		if err != nil {
			return "", mgsErr(err, "read "+other+" update status")
		}
		if st.InProgress() {
			return other, nil
		}
	}
	return "", nil
}
