package agents

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// InFlightAgentServer is a server whose child workflow a rollout waits for.
type InFlightAgentServer struct {
	Seq     int    `json:"seq"`
	ChildID string `json:"childId"`
	// AskTemporal: while its row is open, ask Temporal whether the child
	// still runs (one call per server: only for stragglers, and while the
	// rollout waits for its last servers).
	AskTemporal bool `json:"askTemporal,omitempty"`
}

// AgentServersEndedRequest asks which in-flight servers have ended.
type AgentServersEndedRequest struct {
	RolloutID uuid.UUID             `json:"rolloutId"`
	Servers   []InFlightAgentServer `json:"servers"`
}

// EndedAgentServer is an in-flight server whose end the ledger knows.
type EndedAgentServer struct {
	Seq      int       `json:"seq"`
	Server   uuid.UUID `json:"server"`
	Hostname string    `json:"hostname"`
	Outcome  string    `json:"outcome"`
	Error    string    `json:"error,omitempty"`
}

// AgentServersEnded returns the in-flight servers whose plan row has ended
// (the row is the truth: a child's report may never come). A row still
// open whose child workflow is closed (terminated, timed out) is ended
// failed here, since no one else will end it (asked only where AskTemporal).
func (a *AgentLedgerActivities) AgentServersEnded(ctx context.Context, r AgentServersEndedRequest) ([]EndedAgentServer, error) {
	seqs := make([]int, len(r.Servers))
	for i, s := range r.Servers {
		seqs[i] = s.Seq
	}
	rows, err := a.Ledger.Store.AgentServersBySeq(ctx, r.RolloutID, seqs)
	if err != nil {
		return nil, err
	}
	bySeq := make(map[int]ledger.AgentServer, len(rows))
	for _, row := range rows {
		bySeq[row.Seq] = row
	}
	var out []EndedAgentServer
	for _, s := range r.Servers {
		row, ok := bySeq[s.Seq]
		if !ok {
			continue
		}
		if open(row.State) {
			if !s.AskTemporal {
				continue
			}
			why, closed := a.childClosed(ctx, s.ChildID)
			if !closed {
				continue
			}
			row.State, row.Outcome, row.Reason = ledger.AgentServerFailed, "failed", why
			if err := a.Ledger.Store.SetAgentServer(ctx, r.RolloutID, row); err != nil {
				return nil, err
			}
		}
		outcome := row.Outcome
		if outcome == "" || row.State != ledger.AgentServerDone && outcome != "cancelled" {
			outcome = "failed"
			if row.State == ledger.AgentServerDone {
				outcome = "installed"
			}
		}
		out = append(out, EndedAgentServer{Seq: s.Seq, Server: row.ServerUUID, Hostname: row.Hostname,
			Outcome: outcome, Error: row.Reason})
	}
	return out, nil
}

func open(state string) bool {
	return state == ledger.AgentServerPending || state == ledger.AgentServerRunning
}

// childClosed reports whether a server's child workflow has closed (and
// how); without a Temporal client it cannot tell and says no.
func (a *AgentLedgerActivities) childClosed(ctx context.Context, id string) (string, bool) {
	if a.Ledger.Temporal == nil || id == "" {
		return "", false
	}
	desc, err := a.Ledger.Temporal.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return fmt.Sprintf("its workflow %s is gone without ending the server", id), true
	case err != nil:
		return "", false
	}
	st := desc.GetWorkflowExecutionInfo().GetStatus()
	if activities.Running(st) {
		return "", false
	}
	return fmt.Sprintf("its workflow %s ended (%s) without ending the server", id, st), true
}
