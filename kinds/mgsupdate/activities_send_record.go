package mgsupdate

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/ledger"
)

// sendLog is the ledger's record of the sends of one attempt's update ID.
// A send is recorded (sending-N) before MGS is asked, and a refusal
// (refused-N: the SP was busy with another update, so ours never reached
// it) once MGS said so. A send without its refusal may have reached the
// SP, and then nothing is sent again under that ID: a retry asks MGS
// instead. Like omicron's driver, which sends each update ID once and
// answers a failed start with a new attempt under a new ID.
type sendLog struct {
	sent, refused int
	// last is the newest send's record (for the message of a lost one).
	last ledger.Event
}

// open: a send may have reached the SP.
func (l sendLog) open() bool { return l.sent > l.refused }

const (
	sendingStep = "sending-"
	refusedStep = "refused-"
)

// sendsOf reads the attempt's send records. No ledger (tests of the
// activities alone): no record, every start sends.
func (a *MGSActivities) sendsOf(ctx context.Context, id uuid.UUID) (sendLog, error) {
	var l sendLog
	if a.Store == nil {
		return l, nil
	}
	evs, err := a.Store.Events(ctx, id)
	if err != nil {
		return l, fmt.Errorf("read attempt %s's ledger events: %w", id, err) // retried: never guess
	}
	for _, e := range evs {
		switch {
		case strings.HasPrefix(e.Step, sendingStep):
			l.sent++
			l.last = e
		case strings.HasPrefix(e.Step, refusedStep):
			l.refused++
		}
	}
	return l, nil
}

// recordSending writes send n's record. It must be durable before MGS is
// asked: an error fails the start before anything is sent (and the start
// is retried).
func (a *MGSActivities) recordSending(ctx context.Context, in StartUpdateInput, n int) error {
	return a.record(ctx, in.UpdateID, sendingStep+strconv.Itoa(n),
		fmt.Sprintf("sending update %s (%s of SP %s %d) to MGS", in.UpdateID, in.Component, in.SP.Type, in.SP.Slot))
}

// recordRefused writes that send n never reached the SP. An error leaves
// the send open: the retry then finds no update of ours on the SP and
// reports the attempt lost (a new attempt, never a second delivery).
func (a *MGSActivities) recordRefused(ctx context.Context, id uuid.UUID, n int, why string) error {
	return a.record(ctx, id, refusedStep+strconv.Itoa(n), why)
}

func (a *MGSActivities) record(ctx context.Context, id uuid.UUID, step, msg string) error {
	if a.Store == nil {
		return nil
	}
	if err := a.Store.AppendEvent(ctx, ledger.Event{AttemptID: id, Step: step, Message: msg, Worker: a.identity(ctx)}); err != nil {
		return fmt.Errorf("record %s of update %s in the ledger: %w", step, id, err)
	}
	return nil
}
