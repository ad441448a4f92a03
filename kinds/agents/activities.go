package agents

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet"
	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// CoreAgents run the install machinery itself: each is installed alone.
var CoreAgents = []string{"agents_core", "config-agent", CNAgent}

// CNAgent runs the install tasks and installs itself through its
// cn-agent-update service (sdc-cn-agent
// lib/backends/smartos/tasks/agent_install.js).
const CNAgent = "cn-agent"

// MarlinAgent is Manta's agent, as server.agents names it (sdc-cnapi
// test/test-servers.js); sdcadm never updates it (its agent services
// leave it out: sdcadm lib/steps/sapi.js, etc/defaults.json). fleetsaga
// touches it only when a request names it.
const MarlinAgent = "marlin"

// IsCoreAgent reports whether name is one of CoreAgents.
func IsCoreAgent(name string) bool {
	for _, c := range CoreAgents {
		if c == name {
			return true
		}
	}
	return false
}

// AgentActivities do every CNAPI, SAPI, IMGAPI and agent-ledger call of the
// agent workflows.
type AgentActivities struct {
	CNAPI  *triton.CNAPI
	SAPI   *triton.SAPI
	IMGAPI *triton.IMGAPI
	Store  *ledger.Store
	// Identity names this worker in the ledger's events.
	Identity string
	// ReportWait and SelfUpdateWait shorten how long an install waits for
	// the server to show its image (zero: agentReportWait and
	// cnAgentSelfUpdateWait). Only tests set them.
	ReportWait, SelfUpdateWait time.Duration
}

// NewAgentActivities builds the activities from the fleet endpoints.
func NewAgentActivities(ep fleet.Endpoints, hc *http.Client, store *ledger.Store, identity string) (*AgentActivities, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	opts := []triton.Option{triton.WithHTTPClient(hc), triton.WithUserAgent("fleetsaga-worker")}
	if ep.Fleetsim == "" {
		// Real Triton answers carry many more fields than fleetsaga reads.
		opts = append(opts, triton.WithAllowUnknownFields())
	}
	var errs []error
	cn, err := triton.NewCNAPI(ep.CNAPI, opts...)
	errs = append(errs, err)
	sapi, err := triton.NewSAPI(ep.SAPI, opts...)
	errs = append(errs, err)
	img, err := triton.NewIMGAPI(ep.IMGAPI, opts...)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &AgentActivities{CNAPI: cn, SAPI: sapi, IMGAPI: img, Store: store, Identity: identity}, nil
}

// tritonErr is the one place that turns a Triton client error into a
// Temporal error: retryable answers stay plain errors (the retry policy
// repeats them), everything else becomes non-retryable with the API's code.
func tritonErr(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || triton.IsRetryable(err) {
		return fmt.Errorf("%s: %w", what, err)
	}
	typ := failure.WithCode(failure.TritonAPI, triton.ErrorCode(err))
	return temporal.NewNonRetryableApplicationError(what+": "+err.Error(), typ, err)
}

func nonRetryable(typ, format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), typ, nil)
}

// PlannedAgent is one agent image a rollout installs.
type PlannedAgent struct {
	Name        string    `json:"name"`
	ImageUUID   uuid.UUID `json:"imageUuid"`
	Version     string    `json:"version"`
	ServiceUUID uuid.UUID `json:"serviceUuid"`
	// OnlyIfPresent: update only servers that already run the agent (agents
	// picked by "all agents", not named).
	OnlyIfPresent bool `json:"onlyIfPresent,omitempty"`
}

// Label is name@version.
func (p PlannedAgent) Label() string { return p.Name + "@" + p.Version }

// AgentServerState is what PrepareAgentServer found.
type AgentServerState struct {
	Hostname string         `json:"hostname"`
	Agents   []triton.Agent `json:"agents"`
}

// PrepareAgentServerRequest starts one server's install.
type PrepareAgentServerRequest struct {
	RolloutID uuid.UUID `json:"rolloutId"`
	Server    uuid.UUID `json:"server"`
	AttemptID uuid.UUID `json:"attemptId"`
}

// PrepareAgentServer marks the server running in the rollout and checks it
// can be touched: it must exist, be running and be set up.
func (a *AgentActivities) PrepareAgentServer(ctx context.Context, r PrepareAgentServerRequest) (AgentServerState, error) {
	s, err := a.CNAPI.GetServer(ctx, r.Server)
	if triton.IsNotFound(err) {
		return AgentServerState{}, nonRetryable(failure.ServerNotFound, "server %s is not in CNAPI", r.Server)
	}
	if err != nil {
		return AgentServerState{}, tritonErr(err, "get server")
	}
	if s.Status != triton.StatusRunning {
		return AgentServerState{}, nonRetryable(failure.ServerNotRunning, "server %s (%s) is not running: status %s", s.Hostname, s.UUID, s.Status)
	}
	if !s.Setup {
		return AgentServerState{}, nonRetryable(failure.ServerNotSetup, "server %s (%s) is not set up", s.Hostname, s.UUID)
	}
	if r.RolloutID != uuid.Nil {
		if err := a.Store.SetAgentServer(ctx, r.RolloutID, ledger.AgentServer{ServerUUID: r.Server,
			State: ledger.AgentServerRunning, AttemptID: r.AttemptID}); err != nil {
			return AgentServerState{}, err
		}
	}
	return AgentServerState{Hostname: s.Hostname, Agents: s.Agents}, nil
}

// InstallAgentRequest installs one agent image on one server.
type InstallAgentRequest struct {
	Server uuid.UUID    `json:"server"`
	Agent  PlannedAgent `json:"agent"`
	// AttemptID is the server's ledger attempt: the task ID is recorded
	// there before polling, so a retry resumes it (uuid.Nil: heartbeat only).
	AttemptID uuid.UUID `json:"attemptId,omitzero"`
	// PollInterval is how long one task wait lasts between heartbeats.
	PollInterval time.Duration `json:"pollInterval"`
}

// InstallAgentResult says how the install ended.
type InstallAgentResult struct {
	TaskID string `json:"taskId,omitempty"`
	// AlreadyInstalled: CNAPI already showed the image (a retry after the
	// task finished), nothing was started.
	AlreadyInstalled bool `json:"alreadyInstalled,omitempty"`
}

// InstallAgentImage starts cn-agent's agent_install task and waits until
// the server's own agent list in CNAPI shows the image (confirmInstall),
// heartbeating the task ID: a retry (after a worker died) resumes waiting
// on the same task instead of starting another. A failed task is a
// non-retryable AgentTaskFailed (cn-agent restored its backup); a task that
// ended while CNAPI still shows the old image is AgentNotConfirmed.
func (a *AgentActivities) InstallAgentImage(ctx context.Context, r InstallAgentRequest) (InstallAgentResult, error) {
	poll := max(r.PollInterval, time.Second)
	taskID, records, err := a.ledgeredTask(ctx, r)
	if err != nil {
		return InstallAgentResult{}, err
	}
	if taskID == "" && activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &taskID)
	}
	if taskID == "" {
		s, err := a.CNAPI.GetServer(ctx, r.Server)
		if err != nil {
			return InstallAgentResult{}, tritonErr(err, "get server")
		}
		if cur, ok := s.Agent(r.Agent.Name); ok && cur.ImageUUID == r.Agent.ImageUUID {
			return InstallAgentResult{AlreadyInstalled: true}, nil
		}
		taskID, err = a.CNAPI.InstallAgent(ctx, r.Server, triton.InstallAgentRequest{ImageUUID: r.Agent.ImageUUID, PackageName: r.Agent.Name})
		if err != nil {
			if triton.HasCode(err, triton.CodeServerNotRunning) {
				return InstallAgentResult{}, nonRetryable(failure.ServerNotRunning, "install %s on %s: %v", r.Agent.Label(), r.Server, err)
			}
			return InstallAgentResult{}, tritonErr(err, "start agent_install")
		}
		activity.RecordHeartbeat(ctx, taskID)
		// Ledgered before polling: a retry resumes this task.
		if err := a.recordTask(ctx, r, records, taskID); err != nil {
			return InstallAgentResult{}, err
		}
		records++
	}
	w := a.newInstallWatch(r, poll)
	for {
		task, err := a.CNAPI.WaitTask(ctx, taskID, poll)
		if triton.IsNotFound(err) {
			// CNAPI forgot the task (restart): start over on the next try.
			activity.RecordHeartbeat(ctx, "")
			if err := a.recordTask(ctx, r, records, ""); err != nil {
				return InstallAgentResult{}, err
			}
			return InstallAgentResult{}, fmt.Errorf("task %s vanished from CNAPI", taskID)
		}
		if err != nil {
			return InstallAgentResult{}, tritonErr(err, "wait for task "+taskID)
		}
		activity.RecordHeartbeat(ctx, taskID)
		done, err := w.check(ctx, task)
		if done || err != nil {
			return InstallAgentResult{TaskID: taskID}, err
		}
		if err := ctx.Err(); err != nil {
			return InstallAgentResult{}, err
		}
	}
}

// RefreshAgentRequest names one agent of the plan on one server.
type RefreshAgentRequest struct {
	Server uuid.UUID    `json:"server"`
	Agent  PlannedAgent `json:"agent"`
}

// ConfirmServerAgent returns the agent's entry in CNAPI's server.agents
// when it shows the planned image (its UUID is the agent instance UUID,
// uuid.Nil for older agents), else a non-retryable AgentNotConfirmed. It
// only reads: server.agents is what the server's cn-agent posted
// (sdc-cn-agent lib/backends/smartos/tasks/shared.js refreshAgents), and
// fleetsaga never writes it from its plan, which could record an install
// that did not happen.
func (a *AgentActivities) ConfirmServerAgent(ctx context.Context, r RefreshAgentRequest) (triton.Agent, error) {
	cur, shown, err := a.serverAgent(ctx, r)
	if err != nil || shown {
		return cur, err
	}
	return triton.Agent{}, notConfirmed(r, cur, "")
}

// serverAgent reads the agent's entry in server.agents and whether it
// shows the planned image.
func (a *AgentActivities) serverAgent(ctx context.Context, r RefreshAgentRequest) (triton.Agent, bool, error) {
	s, err := a.CNAPI.GetServer(ctx, r.Server)
	if err != nil {
		return triton.Agent{}, false, tritonErr(err, "get server")
	}
	cur, _ := s.Agent(r.Agent.Name)
	return cur, cur.ImageUUID == r.Agent.ImageUUID, nil
}

// notConfirmed is the AgentNotConfirmed error: what server.agents shows
// instead of the planned image, and why fleetsaga stopped looking.
func notConfirmed(r RefreshAgentRequest, cur triton.Agent, why string) error {
	shown := "no " + r.Agent.Name
	if cur.Name != "" {
		shown = r.Agent.Name + "@" + cur.Version + " (" + cur.ImageUUID.String() + ")"
	}
	if why != "" {
		why = ": " + why
	}
	return nonRetryable(failure.AgentNotConfirmed, "server %s: CNAPI's server.agents shows %s, not %s (%s)%s",
		r.Server, shown, r.Agent.Label(), r.Agent.ImageUUID, why)
}

// StableInstanceUUID is the instance UUID fleetsaga gives an agent that has
// none: the same for the same service and server, so a retried create
// cannot make a second instance.
func StableInstanceUUID(service, server uuid.UUID) uuid.UUID {
	return uuid.NewSHA1(service, server[:])
}

// SetAgentIntentRequest moves a server's SAPI intent for one agent.
type SetAgentIntentRequest struct {
	Server uuid.UUID    `json:"server"`
	Agent  PlannedAgent `json:"agent"`
	// InstanceUUID is the agent's UUID from server.agents (its instance).
	InstanceUUID uuid.UUID `json:"instanceUuid"`
}

// SetAgentIntentResult says what changed in SAPI.
type SetAgentIntentResult struct {
	InstanceUUID uuid.UUID `json:"instanceUuid"`
	Created      bool      `json:"created,omitempty"`
	Changed      bool      `json:"changed,omitempty"`
}

// SetAgentIntent sets the server's SAPI instance of the agent to the image,
// creating it (with the agent's own, stable UUID) when missing. Called only
// after the actual state moved.
func (a *AgentActivities) SetAgentIntent(ctx context.Context, r SetAgentIntentRequest) (SetAgentIntentResult, error) {
	id := r.InstanceUUID
	if id == uuid.Nil {
		id = StableInstanceUUID(r.Agent.ServiceUUID, r.Server)
	}
	ours := func(in triton.Instance) bool {
		return in.ServiceUUID == r.Agent.ServiceUUID && instanceOnServer(in, r.Server, id)
	}
	in, err := a.SAPI.GetInstance(ctx, id)
	switch {
	case err == nil && !ours(in):
		// The UUID belongs to something else: look the server up instead,
		// and never create under that UUID (SAPI would overwrite it).
		id = StableInstanceUUID(r.Agent.ServiceUUID, r.Server)
		in, err = a.findInstance(ctx, r.Agent.ServiceUUID, r.Server)
	case triton.IsNotFound(err):
		in, err = a.findInstance(ctx, r.Agent.ServiceUUID, r.Server)
	}
	if triton.IsNotFound(err) {
		// SAPI stores a create under any UUID, a used one included (no
		// 409: sdc-sapi lib/server/model.js createInstance); id answered
		// 404 above, and a retry after a lost answer finds it there.
		created, cerr := a.SAPI.CreateInstance(ctx, triton.CreateInstanceRequest{
			UUID: id, ServiceUUID: r.Agent.ServiceUUID,
			Params: triton.InstanceParams{ServerUUID: r.Server, ImageUUID: r.Agent.ImageUUID},
		})
		if cerr != nil {
			return SetAgentIntentResult{}, tritonErr(cerr, "create SAPI instance")
		}
		return SetAgentIntentResult{InstanceUUID: created.UUID, Created: true, Changed: true}, nil
	}
	if err != nil {
		return SetAgentIntentResult{}, tritonErr(err, "find SAPI instance")
	}
	if in.Params.ImageUUID == r.Agent.ImageUUID {
		return SetAgentIntentResult{InstanceUUID: in.UUID}, nil
	}
	if _, err := a.SAPI.SetInstanceImage(ctx, in.UUID, r.Server, r.Agent.ImageUUID); err != nil {
		return SetAgentIntentResult{}, tritonErr(err, "update SAPI instance")
	}
	return SetAgentIntentResult{InstanceUUID: in.UUID, Changed: true}, nil
}

// findInstance finds the service's instance on server (SAPI filters only by
// service); a 404-class *triton.Error when there is none.
func (a *AgentActivities) findInstance(ctx context.Context, service, server uuid.UUID) (triton.Instance, error) {
	list, err := a.SAPI.ListInstances(ctx, service)
	if err != nil {
		return triton.Instance{}, err
	}
	for _, in := range list {
		if instanceOnServer(in, server, uuid.Nil) {
			return in, nil
		}
	}
	return triton.Instance{}, &triton.Error{API: "sapi", Method: "GET", URL: "/instances", Status: http.StatusNotFound,
		Code: triton.CodeResourceNotFound, Message: fmt.Sprintf("no instance of service %s on server %s", service, server)}
}

// FinishAgentServerRequest ends one server of a rollout.
type FinishAgentServerRequest struct {
	RolloutID  uuid.UUID    `json:"rolloutId"`
	Server     uuid.UUID    `json:"server"`
	AttemptID  uuid.UUID    `json:"attemptId"`
	State      ledger.State `json:"state"`
	Outcome    string       `json:"outcome"`
	Error      string       `json:"error,omitempty"`
	DurationMS int64        `json:"durationMs"`
	// Intent, when set, is the attempt whose intent write was in doubt (the
	// workflow was cancelled while writing it): it is written (idempotent)
	// before it is ended, so a write that lands late leaves nothing pending.
	Intent *ledger.Attempt `json:"intent,omitempty"`
}

// FinishAgentServer ends the server's ledger attempt (if one was written)
// and its row in the rollout plan. Idempotent.
func (a *AgentActivities) FinishAgentServer(ctx context.Context, r FinishAgentServerRequest) error {
	if r.Intent != nil {
		var busy *ledger.ErrTargetBusy
		if err := a.Store.RecordIntent(ctx, *r.Intent); err != nil && !errors.As(err, &busy) && !errors.Is(err, ledger.ErrAttemptEnded) {
			return err
		}
	}
	if r.AttemptID != uuid.Nil {
		err := a.Store.FinishAttempt(ctx, ledger.Finish{AttemptID: r.AttemptID, State: r.State, Outcome: r.Outcome, Error: r.Error})
		if err != nil && !errors.Is(err, ledger.ErrNotFound) {
			return err
		}
		if err == nil {
			msg := r.Outcome
			if r.Error != "" {
				msg += ": " + r.Error
			}
			if err := a.Store.AppendEvent(ctx, ledger.Event{AttemptID: r.AttemptID, Step: "finish",
				State: string(r.State), Message: msg, Worker: a.identity(ctx)}); err != nil {
				return err
			}
		}
	}
	if r.RolloutID == uuid.Nil {
		return nil
	}
	state := ledger.AgentServerDone
	if r.State != ledger.StateCompleted {
		state = ledger.AgentServerFailed
	}
	return a.Store.SetAgentServer(ctx, r.RolloutID, ledger.AgentServer{ServerUUID: r.Server, State: state,
		Outcome: r.Outcome, Reason: r.Error, AttemptID: r.AttemptID, DurationMS: r.DurationMS})
}

func (a *AgentActivities) identity(ctx context.Context) string {
	if a.Identity != "" {
		return a.Identity
	}
	if activity.IsActivity(ctx) {
		return activity.GetInfo(ctx).TaskQueue
	}
	return ""
}
