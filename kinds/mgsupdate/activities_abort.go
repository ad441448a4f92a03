package mgsupdate

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/mgs"
)

// AbortInput aborts one update by ID.
type AbortInput struct {
	SP        mgs.SpIdentifier `json:"sp"`
	Component string           `json:"component"`
	UpdateID  uuid.UUID        `json:"updateId"`
	AttemptID uuid.UUID        `json:"attemptId"`
	Reason    string           `json:"reason"`
}

// Abort results.
const (
	AbortDone       = "aborted"          // the SP aborted it (or had already)
	AbortNotCurrent = "not_current"      // the SP has no such update in progress (reset, replaced)
	AbortTooLate    = "already_complete" // it completed: too late to abort
)

// MGSAbortUpdate aborts an update if it is the SP's current one. "Not
// current" and "already complete" are answers, not errors: they are read
// from the SP's status when MGS's answer is ambiguous.
func (a *MGSActivities) MGSAbortUpdate(ctx context.Context, in AbortInput) (string, error) {
	set, err := a.set()
	if err != nil {
		return "", err
	}
	res, err := abortUpdate(ctx, set, in.SP, in.Component, in.UpdateID)
	if err != nil {
		return "", err
	}
	a.event(ctx, in.AttemptID, "abort:"+in.UpdateID.String(), "", fmt.Sprintf("abort %s (%s): %s", in.UpdateID, in.Reason, res))
	return res, nil
}

// abortUpdate aborts update id and says what came of it. MGS answers an
// abort the SP refused (too late, another ID) with an ambiguous 503, so
// the SP's status, re-read, decides; an abort that did not take is
// retried.
func abortUpdate(ctx context.Context, set *mgs.Set, sp mgs.SpIdentifier, comp string, id uuid.UUID) (string, error) {
	err := set.Do(ctx, func(ctx context.Context, c *mgs.Client) error { return c.UpdateAbort(ctx, sp, comp, id) })
	if err == nil {
		// Success also means "nothing of yours was in progress": say which.
		st, serr := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.UpdateStatus, error) {
			return c.UpdateStatus(ctx, sp, comp)
		})
		if serr == nil && mgs.AbortVerdict(st, id) == mgs.VerdictNotCurrent {
			return AbortNotCurrent, nil
		}
		return AbortDone, nil
	}
	if cl := mgs.Classify(err); cl == mgs.ClassFatal || cl == mgs.ClassCanceled {
		return "", mgsErr(err, "abort update "+id.String())
	}
	st, serr := mgs.TryAll(ctx, set, func(ctx context.Context, c *mgs.Client) (mgs.UpdateStatus, error) {
		return c.UpdateStatus(ctx, sp, comp)
	})
	if serr != nil {
		return "", mgsErr(serr, "read update status after aborting "+id.String())
	}
	switch mgs.AbortVerdict(st, id) {
	case mgs.VerdictAborted:
		return AbortDone, nil
	case mgs.VerdictTooLate:
		return AbortTooLate, nil
	case mgs.VerdictNotCurrent:
		return AbortNotCurrent, nil
	}
	return "", mgsErr(err, "abort update "+id.String()+" (the SP still reports "+st.String()+")")
}
