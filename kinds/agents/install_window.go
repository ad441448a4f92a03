package agents

import (
	"fmt"
	"slices"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// The sliding window stays full across continue-as-new:
// children are abandoned by the run that started them, report their end by
// signal to the rollout's workflow ID, and the servers in flight are
// carried into the next run; waiting for every child in each run let one
// straggler stall every 500 servers.

// fanOutAcrossRuns starts this run's share of the plan and continues as new
// as soon as it has, with the servers still in flight; only the last run
// waits for them.
func (r *agentRollout) fanOutAcrossRuns(ctx workflow.Context) (more bool, err error) {
	r.l.Phase(ctx, workflows.PhaseInstalling)
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	r.reports = workflow.GetSignalChannel(ctx, AgentServerDoneSignal)
	workflow.Go(dctx, func(ctx workflow.Context) {
		for {
			var d AgentServerDone
			r.reports.Receive(ctx, &d)
			r.reported(ctx, d)
		}
	})
	// The checks run on while a cancel is passed on to the children.
	checkCtx, stopChecks := workflow.WithCancel(dctx)
	defer stopChecks()
	workflow.Go(checkCtx, r.stragglerLoop)

	more, err = r.startServers(ctx)
	if r.overBudget() {
		r.stopped = true
		r.l.Phase(ctx, workflows.PhaseBudgetExceeded, fmt.Sprintf("%d failed, budget %d: letting %d running servers finish",
			r.c.Failed, r.budget, len(r.running)))
	}
	// Every started child is recorded before the run ends or cancels them.
	_ = workflow.Await(dctx, func() bool { return r.starting == 0 })
	if more && !r.stopped && err == nil && ctx.Err() == nil {
		return true, nil // the servers in flight are carried (carryInFlight)
	}
	r.settle(ctx, dctx)
	if ctx.Err() != nil {
		return false, temporal.NewCanceledError("agent rollout cancelled")
	}
	return false, err
}

// startServers starts servers in the window until the plan is done, the
// budget is exceeded, the run has started its share (more), the plan
// cannot be read (err) or the rollout is cancelled.
func (r *agentRollout) startServers(ctx workflow.Context) (more bool, err error) {
	var buf []ledger.AgentServer
	startedHere := 0
	if r.c.Cursor >= r.c.Plan.LastSeq {
		return false, nil
	}
	for !r.overBudget() {
		if startedHere >= r.in.ChildrenPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return true, nil
		}
		if len(buf) == 0 {
			if err := workflow.ExecuteActivity(workflows.LedgerOptions(ctx), agentActs.NextAgentServers, NextAgentServersRequest{
				RolloutID: r.c.RolloutID, After: r.c.Cursor, Limit: min(planPage, r.in.ChildrenPerRun-startedHere),
			}).Get(ctx, &buf); err != nil {
				if ctx.Err() != nil {
					return false, nil
				}
				return false, err
			}
			if len(buf) == 0 {
				return false, nil
			}
		}
		if err := workflow.Await(ctx, func() bool {
			return r.overBudget() || (!r.c.Paused && len(r.running) < r.in.Concurrency)
		}); err != nil || r.overBudget() {
			return false, nil
		}
		srv := buf[0]
		buf = buf[1:]
		r.c.Cursor = srv.Seq
		startedHere++
		r.startServer(ctx, srv)
	}
	return false, nil
}

// startServer starts a server's child, abandoned when this run ends. It
// runs on a disconnected context: a cancel reaches every child the same
// way, its own and those carried from earlier runs (cancelInFlight).
func (r *agentRollout) startServer(ctx workflow.Context, srv ledger.AgentServer) {
	opts := r.childOptions(ctx, srv, enumspb.PARENT_CLOSE_POLICY_ABANDON)
	r.running = append(r.running, InFlightServer{Seq: srv.Seq, Hostname: srv.Hostname, Started: workflow.Now(ctx)})
	in := r.childInput(srv)
	in.ReportTo, in.ParentCheck = workflow.GetInfo(ctx).WorkflowExecution.ID, r.in.StragglerCheck
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	child := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(dctx, opts), AgentInstallServer, in)
	r.starting++
	workflow.Go(dctx, func(ctx workflow.Context) {
		defer func() { r.starting-- }()
		err := child.GetChildWorkflowExecution().Get(ctx, nil)
		if err != nil && !temporal.IsWorkflowExecutionAlreadyStartedError(err) {
			r.done(ctx, srv.Seq, AgentServerResult{Server: srv.ServerUUID, Hostname: srv.Hostname,
				Outcome: AgentOutcomeFailed, Error: "could not start: " + failure.Line(err)})
			return
		}
		// Already started: this rollout's own child (the ID holds the
		// rollout ID), started before an operator reset the run; it
		// reports its end, or its ledger row says it.
		// Only a child Temporal has started can be asked about: until
		// then "not found" means "not yet", not "gone" (seen under load).
		if i := slices.IndexFunc(r.running, func(rs InFlightServer) bool { return rs.Seq == srv.Seq }); i >= 0 {
			r.running[i].ChildID = opts.WorkflowID
		}
	})
}

// reported books a server's end signalled by its child (another rollout's
// late report on the same workflow ID is ignored).
func (r *agentRollout) reported(ctx workflow.Context, d AgentServerDone) {
	if d.RolloutID != r.c.RolloutID {
		return
	}
	r.done(ctx, d.Seq, d.Result)
}

// carryInFlight hands the servers in flight to the next run, right before
// it continues as new (nothing may yield after it): it first books every
// report already received, so none is lost with this run.
// A pause or resume of this task needs no drain: this run's last wait
// (starting == 0 in fanOutAcrossRuns) is released by another coroutine, so
// ListenPauseResume runs before the carry is encoded; its blocked Select
// holds a signal delivered to it, which a ReceiveAsync here would not see
// (Select in temporalio/sdk-go internal/internal_workflow.go).
func (r *agentRollout) carryInFlight(ctx workflow.Context) {
	for {
		var d AgentServerDone
		if !r.reports.ReceiveAsync(&d) {
			break
		}
		r.reported(ctx, d)
	}
	r.c.InFlight = slices.Clone(r.running)
}

// settle waits until no server is in flight. A cancel of the rollout,
// before or meanwhile, is passed on to every child in flight.
func (r *agentRollout) settle(ctx, dctx workflow.Context) {
	r.settling = true
	if err := workflow.Await(ctx, func() bool { return len(r.running) == 0 }); err == nil {
		return
	}
	r.cancelInFlight(dctx)
	_ = workflow.Await(dctx, func() bool { return len(r.running) == 0 })
}

// cancelInFlight asks every child in flight to cancel; each ends its
// ledger row and reports. One that cannot (terminated, gone) is booked
// from the ledger by the straggler checks.
func (r *agentRollout) cancelInFlight(ctx workflow.Context) {
	r.l.Step(ctx, workflows.PhaseInstalling, fmt.Sprintf("cancelling %d running server(s)", len(r.running)))
	futures := make([]workflow.Future, len(r.running))
	for i, rs := range r.running {
		futures[i] = workflow.RequestCancelExternalWorkflow(ctx, rs.ChildID, "")
	}
	for i, f := range futures {
		if err := f.Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Info("could not cancel a server's child (it may have ended)", "child", r.running[i].ChildID, "error", err)
		}
	}
}

// bookEndedFromLedger books the servers in flight whose ledger row ended
// without a report reaching the rollout, and those whose child closed
// without ending its row (e.g. terminated by an operator: the activity
// ends the row failed). Temporal is asked about stragglers only, and about
// every server once the rollout waits for its last ones.
func (r *agentRollout) bookEndedFromLedger(ctx workflow.Context) {
	if len(r.running) == 0 {
		return
	}
	req := AgentServersEndedRequest{RolloutID: r.c.RolloutID}
	for _, rs := range r.running {
		req.Servers = append(req.Servers, InFlightAgentServer{Seq: rs.Seq, ChildID: rs.ChildID,
			AskTemporal: rs.Flagged || r.settling})
	}
	var ended []EndedAgentServer
	if err := workflow.ExecuteActivity(workflows.LedgerOptions(ctx), agentLedgerActs.AgentServersEnded, req).Get(ctx, &ended); err != nil {
		workflow.GetLogger(ctx).Warn("could not check the ledger for ended servers", "error", err)
		return
	}
	for _, e := range ended {
		r.done(ctx, e.Seq, AgentServerResult{Server: e.Server, Hostname: e.Hostname, Outcome: e.Outcome, Error: e.Error})
	}
}
