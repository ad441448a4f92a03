package agents

import (
	"github.com/google/uuid"
	"go.temporal.io/sdk/workflow"
)

// AgentServerDoneSignal is how a server's child tells its rollout that the
// server ended: sent to the rollout's workflow ID (no run ID), so it
// reaches whichever run is current after continue-as-new.
const AgentServerDoneSignal = "agent-server-done"

// AgentServerDone is the signal's payload.
type AgentServerDone struct {
	RolloutID uuid.UUID         `json:"rolloutId"`
	Seq       int               `json:"seq"`
	Result    AgentServerResult `json:"result"`
}

// report signals the server's end to its rollout, after the ledger row
// ended (the row stays the truth). A rollout that already closed is not an
// error: there is no one left to tell.
func (s *agentServer) report(ctx workflow.Context) {
	if s.in.ReportTo == "" {
		return
	}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	done := AgentServerDone{RolloutID: s.in.RolloutID, Seq: s.in.Seq, Result: s.res}
	if err := workflow.SignalExternalWorkflow(dctx, s.in.ReportTo, "", AgentServerDoneSignal, done).Get(dctx, nil); err != nil {
		workflow.GetLogger(ctx).Info("could not report the server's end to its rollout (the ledger row holds it)",
			"rollout", s.in.ReportTo, "error", err)
	}
}
