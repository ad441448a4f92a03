package agents

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Per-server outcomes.
const (
	AgentOutcomeInstalled = "installed" // at least one agent was installed
	AgentOutcomeVerified  = "verified"  // every agent already ran its image: nothing installed
	AgentOutcomeFailed    = "failed"
	AgentOutcomeCancelled = "cancelled"
)

// Timing of one server's install.
const (
	// agentTaskTimeout is cn-agent's own bound on a task (1 h) plus room to
	// notice it.
	agentTaskTimeout = 75 * time.Minute
	// serverBusyWait bounds how long a server waits for another update on
	// it (e.g. another agent's rollout) to finish.
	serverBusyWait = 30 * time.Minute
	// defaultAgentPoll is how long one cn-agent task wait lasts between
	// heartbeats.
	defaultAgentPoll = 5 * time.Second
	// defaultParentCheck is how often an abandoned child asks whether its
	// rollout still runs: the rollout checks its servers as often
	// (defaultStragglerCheck).
	defaultParentCheck = defaultStragglerCheck
)

// AgentServerInput is one server of a rollout (the child workflow's input).
type AgentServerInput struct {
	RolloutID uuid.UUID      `json:"rolloutId"`
	Seq       int            `json:"seq"`
	Server    uuid.UUID      `json:"server"`
	Hostname  string         `json:"hostname"`
	Agents    []PlannedAgent `json:"agents"`
	// PollInterval is the task wait between heartbeats (default 5 s).
	PollInterval time.Duration `json:"pollInterval,omitempty"`
	// ReportTo is the rollout's workflow ID, signalled with the server's end
	// (AgentServerDoneSignal); empty for rollouts that wait for the child's
	// result instead.
	ReportTo string `json:"reportTo,omitempty"`
	// ParentCheck is how often a child with a ReportTo asks whether its
	// rollout still runs (default defaultParentCheck; see watchParent).
	ParentCheck time.Duration `json:"parentCheck,omitempty"`
}

// AgentStep is what happened to one agent on one server.
type AgentStep struct {
	Agent   string `json:"agent"`
	Outcome string `json:"outcome"` // installed, verified, absent (only-if-present), failed
	TaskID  string `json:"taskId,omitempty"`
	Error   string `json:"error,omitempty"`
}

// AgentServerResult is how one server ended.
type AgentServerResult struct {
	Server    uuid.UUID   `json:"server"`
	Hostname  string      `json:"hostname"`
	Outcome   string      `json:"outcome"`
	Error     string      `json:"error,omitempty"`
	ErrorType string      `json:"errorType,omitempty"`
	Steps     []AgentStep `json:"steps,omitempty"`
	// Duration is the server's wall time in workflow time.
	Duration time.Duration `json:"duration"`
}

// ServerTarget is the ledger target of a server: every agent install on a
// server shares it, so the ledger never lets two run there at once.
func ServerTarget(server uuid.UUID) string { return "server/" + server.String() }

// AgentInstallServer installs a rollout's agents on one server, one agent
// at a time (core agents first), as a saga ordered so that nothing needs
// undoing: for each agent, install (the actual state moves; cn-agent
// restores its backup if the install fails) → make CNAPI's server.agents
// show it → only then move the SAPI intent. A failure or a cancel leaves the
// intent at the previous image; the ledger attempt is ended on a
// disconnected context either way.
func AgentInstallServer(ctx workflow.Context, in AgentServerInput) (AgentServerResult, error) {
	s := &agentServer{in: in}
	if err := s.setup(ctx); err != nil {
		return s.res, err
	}
	return s.run(ctx)
}

type agentServer struct {
	in       AgentServerInput
	res      AgentServerResult
	progress workflows.Progress
	l        *workflows.Lifecycle
	started  time.Time
}

// Activity references for the agent workflows (nil receivers: only the
// method names matter).
var (
	agentActs       *AgentActivities
	agentLedger     *activities.LedgerActivities
	agentLedgerActs *AgentLedgerActivities
)

func (s *agentServer) setup(ctx workflow.Context) error {
	if s.in.PollInterval <= 0 {
		s.in.PollInterval = defaultAgentPoll
	}
	s.started = workflow.Now(ctx)
	s.res = AgentServerResult{Server: s.in.Server, Hostname: s.in.Hostname}
	labels := make([]string, len(s.in.Agents))
	for i, ag := range s.in.Agents {
		labels[i] = ag.Label()
	}
	s.progress = workflows.Progress{Kind: workflows.KindAgentInstall, Target: ServerTarget(s.in.Server), Artifact: strings.Join(labels, ","),
		Started: s.started, Total: int64(len(s.in.Agents)), Unit: "agents"}
	l, err := workflows.NewLifecycle(ctx, &s.progress, workflows.PhaseRecordingIntent, agentServerWriter{s}, func() workflows.Progress { return s.progress })
	s.l = l
	return err
}

// step announces a phase with its detail (also the progress Message).
func (s *agentServer) step(ctx workflow.Context, p workflows.Phase, detail ...string) {
	s.progress.Message = strings.Join(detail, "")
	s.l.Step(ctx, p, detail...)
}

func (s *agentServer) run(ctx workflow.Context) (AgentServerResult, error) {
	sctx, orphaned := s.watchParent(ctx)
	err := s.steps(sctx)
	s.res.Duration = workflow.Now(ctx).Sub(s.started)
	switch {
	case err == nil:
	case *orphaned:
		s.res.Outcome, s.res.Error = AgentOutcomeCancelled, "stopped: rollout "+s.in.ReportTo+" no longer runs (terminated?)"
	case workflows.IsCancel(ctx, err):
		s.res.Outcome, s.res.Error = AgentOutcomeCancelled, "cancelled"
	default:
		s.res.Outcome, s.res.Error = AgentOutcomeFailed, failure.Line(err)
		var ae *temporal.ApplicationError
		if errors.As(err, &ae) {
			s.res.ErrorType = ae.Type()
		}
	}
	if err != nil && s.l.AttemptID() == uuid.Nil {
		// No attempt of ours (the server stayed busy): the plan row ends.
		s.endPlanRow(ctx, err)
	}
	err = s.l.End(ctx, err, workflows.Ending{Outcome: s.res.Outcome})
	s.report(ctx)
	if err != nil && !workflows.IsCancel(ctx, err) {
		// A failed server is a result, not a workflow failure: the parent
		// counts it against the failure budget.
		return s.res, nil
	}
	return s.res, err
}

// agentServerWriter ends a server's attempt together with its row in the
// rollout's plan (FinishAgentServer).
type agentServerWriter struct{ s *agentServer }

func (w agentServerWriter) Record(ctx workflow.Context, a ledger.Attempt) error {
	return workflows.LedgerWriter{}.Record(ctx, a)
}

func (w agentServerWriter) End(ctx workflow.Context, a ledger.Attempt, recorded bool, f ledger.Finish) error {
	r := w.s.finishRequest(f)
	if !recorded {
		r.Intent = &a // in doubt: written (idempotent) before it is ended
	}
	return workflows.LedgerCall(ctx, agentActs.FinishAgentServer, r).Get(ctx, nil)
}

func (s *agentServer) finishRequest(f ledger.Finish) FinishAgentServerRequest {
	return FinishAgentServerRequest{RolloutID: s.in.RolloutID, Server: s.in.Server, AttemptID: f.AttemptID,
		State: f.State, Outcome: f.Outcome, Error: f.Error, DurationMS: s.res.Duration.Milliseconds()}
}

// endPlanRow ends the server's row in the plan when no attempt of ours was
// recorded (on a disconnected context: also after a cancel).
func (s *agentServer) endPlanRow(ctx workflow.Context, err error) {
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	f := ledger.Finish{State: ledger.StateFailed, Outcome: AgentOutcomeFailed, Error: failure.Line(err)}
	if workflows.IsCancel(ctx, err) {
		f = ledger.Finish{State: ledger.StateCancelled, Outcome: AgentOutcomeCancelled, Error: "cancelled"}
	}
	if err := workflows.LedgerCall(dctx, agentActs.FinishAgentServer, s.finishRequest(f)).Get(dctx, nil); err != nil {
		workflow.GetLogger(ctx).Error("could not record the server's end in the ledger", "server", s.in.Server, "error", err)
	}
}

func (s *agentServer) steps(ctx workflow.Context) error {
	if err := s.recordIntent(ctx); err != nil {
		return err
	}
	st, err := s.prepare(ctx)
	if err != nil {
		return err
	}
	installed := false
	for _, ag := range s.in.Agents {
		step, err := s.agent(ctx, ag, st)
		s.res.Steps = append(s.res.Steps, step)
		if err != nil {
			return err
		}
		installed = installed || step.Outcome == AgentOutcomeInstalled
		s.progress.Done++
	}
	s.res.Outcome = AgentOutcomeVerified
	if installed {
		s.res.Outcome = AgentOutcomeInstalled
	}
	return nil
}

// recordIntent writes the server's attempt before anything is touched. The
// server's ledger target is shared by every agent install, so another
// update active on the server makes this one wait (bounded).
func (s *agentServer) recordIntent(ctx workflow.Context) error {
	at := s.l.FreshAttempt(ctx, 1, workflows.KindAgentInstall, ServerTarget(s.in.Server), s.progress.Artifact)
	deadline := workflow.Now(ctx).Add(serverBusyWait)
	wait := 5 * time.Second
	for {
		err := s.l.RecordIntent(ctx, at)
		if !workflows.IsTargetBusy(err) || !workflow.Now(ctx).Before(deadline) {
			return err
		}
		s.step(ctx, workflows.PhaseWaitingForTarget, "another update is active on this server")
		if err := workflow.Sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(wait*2, time.Minute)
	}
}

func (s *agentServer) apiOptions(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    time.Minute,
		ScheduleToCloseTimeout: 15 * time.Minute,
		RetryPolicy:            workflows.DeviceRetry,
		Summary:                summary,
	})
}

// prepare checks the server is running and set up (it may have gone away
// since the plan) and marks it running in the plan.
func (s *agentServer) prepare(ctx workflow.Context) (AgentServerState, error) {
	s.step(ctx, workflows.PhaseCheckingServer)
	var st AgentServerState
	err := workflow.ExecuteActivity(s.apiOptions(ctx, "check server "+s.in.Hostname), agentActs.PrepareAgentServer,
		PrepareAgentServerRequest{RolloutID: s.in.RolloutID, Server: s.in.Server, AttemptID: s.l.AttemptID()}).Get(ctx, &st)
	if st.Hostname != "" {
		s.res.Hostname = st.Hostname
	}
	return st, err
}

// agent runs the saga of one agent on the server.
func (s *agentServer) agent(ctx workflow.Context, ag PlannedAgent, st AgentServerState) (AgentStep, error) {
	step := AgentStep{Agent: ag.Name}
	decision, _ := DecideAgentOnServer(ag, st.Agents)
	if decision == AgentAbsent {
		step.Outcome = "absent"
		return step, nil
	}
	step.Outcome = AgentOutcomeVerified
	if decision == AgentNeedsInstall {
		s.step(ctx, workflows.PhaseInstalling, ag.Label())
		opts := workflow.ActivityOptions{
			StartToCloseTimeout:    agentTaskTimeout,
			ScheduleToCloseTimeout: 2 * agentTaskTimeout,
			HeartbeatTimeout:       4*s.in.PollInterval + 5*time.Second,
			RetryPolicy:            workflows.DeviceRetry,
			Summary:                fmt.Sprintf("install %s on %s", ag.Label(), s.in.Hostname),
		}
		var res InstallAgentResult
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), agentActs.InstallAgentImage,
			InstallAgentRequest{Server: s.in.Server, Agent: ag, AttemptID: s.l.AttemptID(), PollInterval: s.in.PollInterval}).Get(ctx, &res)
		s.event(ctx, "install:"+ag.Name, err, "installed "+ag.Label()+" (task "+res.TaskID+")")
		if err != nil {
			step.Outcome, step.Error = AgentOutcomeFailed, failure.Line(err)
			return step, err
		}
		step.TaskID = res.TaskID
		if !res.AlreadyInstalled {
			step.Outcome = AgentOutcomeInstalled
		}
	}
	// The actual state moved (or already was there): now CNAPI's record,
	// then the intent.
	s.step(ctx, workflows.PhaseRecordingAgents, ag.Label())
	return s.recordAgent(ctx, ag, step)
}

// event appends a step to the attempt's log (best effort: the ledger
// activity retries on its own; a failure here does not fail the install).
func (s *agentServer) event(ctx workflow.Context, step string, stepErr error, msg string) {
	if s.l.AttemptID() == uuid.Nil {
		return
	}
	e := ledger.Event{AttemptID: s.l.AttemptID(), Step: step, State: "ok", Message: msg}
	if stepErr != nil {
		e.State, e.Message = "error", failure.Line(stepErr)
	}
	if err := workflows.LedgerCall(ctx, agentLedger.AppendEvent, e).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("could not append ledger event", "step", step, "error", err)
	}
}

// recordAgent makes CNAPI's record and then the SAPI intent show the agent
// at its image, in one activity (RecordAgentOnServer: one task where there
// were two).
func (s *agentServer) recordAgent(ctx workflow.Context, ag PlannedAgent, step AgentStep) (AgentStep, error) {
	var intent SetAgentIntentResult
	err := workflow.ExecuteActivity(s.apiOptions(ctx, "record "+ag.Name+" on "+s.in.Hostname+" in CNAPI and SAPI"), agentActs.RecordAgentOnServer,
		RefreshAgentRequest{Server: s.in.Server, Agent: ag}).Get(ctx, &intent)
	s.event(ctx, "intent:"+ag.Name, err, intentNote(intent, ag))
	if err != nil {
		step.Outcome, step.Error = AgentOutcomeFailed, failure.Line(err)
	}
	return step, err
}

// intentNote is the ledger event's text for a SAPI intent moved to ag.
func intentNote(intent SetAgentIntentResult, ag PlannedAgent) string {
	msg := fmt.Sprintf("SAPI instance %s at %s", intent.InstanceUUID, ag.Label())
	if intent.Created {
		msg += " (created)"
	}
	return msg
}
