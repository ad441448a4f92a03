package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"

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
	// ThenWait, when set, makes an accepted start go on to the first leg
	// of the wait for it (MGSWaitUpdate's), in the same activity.
	ThenWait *WaitUpdateInput `json:"thenWait,omitempty"`
}

// StartUpdateResult says whether our update started, or who is busy.
type StartUpdateResult struct {
	Started bool   `json:"started"`
	MGS     string `json:"mgs,omitempty"`
	// Busy: another update holds the SP; Current is its status.
	Busy    bool             `json:"busy"`
	Current mgs.UpdateStatus `json:"current"`
	// Wait is the first leg of the wait (ThenWait; nil when not started).
	Wait *WaitUpdateResult `json:"wait,omitempty"`
}

// MGSStartUpdate sends the image (startUpdate) and, with ThenWait, waits
// for the accepted update: one activity task where there were two. A retry
// after the SP accepted our update only waits: an SP reset since then has
// lost the update, and the wait reports it lost rather than sending the
// same attempt twice.
func (a *MGSActivities) MGSStartUpdate(ctx context.Context, in StartUpdateInput) (StartUpdateResult, error) {
	if in.ThenWait != nil {
		accepted, err := a.acceptedBefore(ctx, in.UpdateID)
		if err != nil {
			return StartUpdateResult{}, err // retried: never guess
		}
		if accepted {
			return a.thenWait(ctx, StartUpdateResult{Started: true}, *in.ThenWait)
		}
	}
	out, err := a.startUpdate(ctx, in)
	if err != nil || !out.Started || in.ThenWait == nil {
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

// acceptedBefore: an earlier attempt of this activity saw MGS accept our
// update. The ledger's start event, written when MGS accepts, is the one
// record of it (a heartbeat saying so may never have reached Temporal:
// heartbeats are throttled, and the worker may die first).
func (a *MGSActivities) acceptedBefore(ctx context.Context, id uuid.UUID) (bool, error) {
	if a.Store == nil || (activity.GetInfo(ctx).Attempt <= 1 && !activity.HasHeartbeatDetails(ctx)) {
		return false, nil // a first attempt (no heartbeat yet), for a fresh attempt ID
	}
	evs, err := a.Store.Events(ctx, id)
	if err != nil {
		return false, fmt.Errorf("read attempt %s's ledger events: %w", id, err)
	}
	return slices.ContainsFunc(evs, func(e ledger.Event) bool { return e.Step == "start" }), nil
}

// startUpdate sends the image through any reachable MGS (failing over on
// transport errors). A retry after a lost reply finds our ID on the SP and
// does not send it again. 503 UpdateInProgress for someone else's update
// is not an error: the result says Busy.
func (a *MGSActivities) startUpdate(ctx context.Context, in StartUpdateInput) (StartUpdateResult, error) {
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
	if in.PollInterval <= 0 {
		in.PollInterval = 3 * time.Second
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
			return out, nil
		}
		other, berr := a.otherComponentBusy(ctx, set, in.SP, in.Component)
		if berr != nil {
			return out, berr
		}
		if other == "" {
			return out, mgsErr(err, "start update") // transient: retried
		}
		// The SP updates another component (one at a time): wait here,
		// with heartbeats, rather than in the workflow.
		activity.RecordHeartbeat(ctx, WaitHeartbeat{State: "other-component-busy: " + other})
		if err := sleepCtx(ctx, in.PollInterval); err != nil {
			return out, err
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
		return out, nil
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
