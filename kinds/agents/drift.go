package agents

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// AgentDriftInput asks for a drift check (and repair).
type AgentDriftInput struct {
	// Agents to check (empty: every agent SAPI knows).
	Agents         []string        `json:"agents,omitempty"`
	Selection      ServerSelection `json:"selection"`
	ExcludeServers []string        `json:"excludeServers,omitempty"`
	// Repair fixes what it can: stale intents are pointed at the actual
	// image, servers behind their intent get the intended image installed
	// (through AgentInstall, with the knobs below).
	Repair            bool          `json:"repair,omitempty"`
	Concurrency       int           `json:"concurrency,omitempty"`
	MaxFailures       int           `json:"maxFailures,omitempty"`
	MaxFailurePercent float64       `json:"maxFailurePercent,omitempty"`
	PollInterval      time.Duration `json:"pollInterval,omitempty"`
}

// Target is "dc/drift/<agents|all>".
func (in AgentDriftInput) Target() string {
	if len(in.Agents) == 0 {
		return "dc/drift/all"
	}
	names := append([]string(nil), in.Agents...)
	sort.Strings(names)
	return "dc/drift/" + strings.Join(names, "+")
}

// ArtifactVersion is empty: a drift check installs the intended images.
func (in AgentDriftInput) ArtifactVersion() string { return "" }

// Validate checks the input without I/O.
func (in AgentDriftInput) Validate() error {
	var errs []error
	if err := in.Selection.Validate(); err != nil {
		errs = append(errs, err)
	}
	seen := map[string]bool{}
	for _, n := range in.Agents {
		if n == "" || seen[n] {
			errs = append(errs, fmt.Errorf("agent names must be present and unique (%q)", n))
		}
		seen[n] = true
	}
	install := AgentInstallInput{Agents: []AgentRequest{{Name: "x"}}, Selection: ServerSelection{All: true},
		Concurrency: in.Concurrency, MaxFailures: in.MaxFailures, MaxFailurePercent: in.MaxFailurePercent, PollInterval: in.PollInterval}
	if err := install.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// AgentRepairRun is one install the repair ran.
type AgentRepairRun struct {
	Agent      string    `json:"agent"`
	ImageUUID  uuid.UUID `json:"imageUuid"`
	Servers    int       `json:"servers"`
	WorkflowID string    `json:"workflowId"`
	Outcome    string    `json:"outcome"`
	Installed  int       `json:"installed"`
	Failed     int       `json:"failed"`
	Error      string    `json:"error,omitempty"`
}

// AgentDriftResult is what the check found and, with repair, fixed.
type AgentDriftResult struct {
	Outcome string           `json:"outcome"`
	Found   AgentDriftReport `json:"found"`
	// IntentsFixed counts instances pointed at (or created for) the actual
	// image.
	IntentsFixed int `json:"intentsFixed,omitempty"`
	// OrphansRemoved counts SAPI instances of deleted servers removed.
	OrphansRemoved int              `json:"orphansRemoved,omitempty"`
	Installs       []AgentRepairRun `json:"installs,omitempty"`
	// Remaining is the drift left after the repair.
	Remaining *AgentDriftReport `json:"remaining,omitempty"`
}

// AgentDriftCheck lists servers whose SAPI intent and CNAPI actual state
// disagree and, with Repair, fixes them.
func AgentDriftCheck(ctx workflow.Context, in AgentDriftInput) (AgentDriftResult, error) {
	d := &driftCheck{in: in}
	if err := d.setup(ctx); err != nil {
		return AgentDriftResult{}, err
	}
	return d.run(ctx)
}

// Bounds of the drift check's activities. Finding drift reads every
// server's agents (minutes on a large datacenter, heartbeating per page);
// a repair writes SAPI once per drifting instance, so it gets longer.
const (
	findDriftTimeout   = 10 * time.Minute
	findDriftBound     = 30 * time.Minute
	findDriftHeartbeat = 2 * time.Minute
	repairTimeout      = 30 * time.Minute
	repairBound        = time.Hour
	repairHeartbeat    = time.Minute
)

// driftCheck is one drift check: find, repair (intents, orphans, installs
// of the servers behind their intent), find again.
type driftCheck struct {
	in       AgentDriftInput
	l        *workflows.Lifecycle
	progress workflows.Progress
	res      AgentDriftResult
}

// setup validates the input and starts the lifecycle. A drift check
// records no ledger attempt: it changes nothing itself (repairs run as
// AgentInstall updates).
func (d *driftCheck) setup(ctx workflow.Context) error {
	if err := d.in.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), failure.InvalidAgentRequest, nil)
	}
	d.progress = workflows.Progress{Kind: workflows.KindAgentDrift, Target: d.in.Target(), Started: workflow.Now(ctx), Unit: "drifts"}
	l, err := workflows.NewLifecycle(ctx, &d.progress, workflows.PhaseCheckingDrift, nil, func() workflows.Progress { return d.progress })
	d.l = l
	return err
}

func (d *driftCheck) run(ctx workflow.Context) (AgentDriftResult, error) {
	if err := d.findDrift(ctx, &d.res.Found); err != nil {
		return d.end(ctx, err)
	}
	total := driftTotal(d.res.Found.Counts)
	d.progress.Total, d.progress.Counts = int64(total), d.res.Found.Counts
	if total == 0 {
		d.res.Outcome = fmt.Sprintf("no drift on %d servers", d.res.Found.Checked)
		return d.end(ctx, nil)
	}
	if !d.in.Repair {
		d.res.Outcome = fmt.Sprintf("%d drifts on %d servers (not repaired)", total, d.res.Found.Checked)
		return d.end(ctx, nil)
	}
	d.repairIntents(ctx)
	d.removeOrphans(ctx)
	for _, g := range d.behindIntent() {
		if err := d.install(ctx, g); err != nil {
			return d.end(ctx, err)
		}
	}
	d.phase(ctx, workflows.PhaseCheckingAgain)
	var after AgentDriftReport
	if err := d.findDrift(ctx, &after); err != nil {
		return d.end(ctx, err)
	}
	d.res.Remaining = &after
	left := driftTotal(after.Counts)
	d.res.Outcome = fmt.Sprintf("%d drifts found, %d left after repair", total, left)
	return d.end(ctx, nil)
}

func (d *driftCheck) end(ctx workflow.Context, err error) (AgentDriftResult, error) {
	return d.res, d.l.End(ctx, err, workflows.Ending{Outcome: d.res.Outcome})
}

// phase announces p; its detail is also the progress message.
func (d *driftCheck) phase(ctx workflow.Context, p workflows.Phase, detail ...string) {
	d.progress.Message = strings.Join(detail, "")
	d.l.Step(ctx, p, detail...)
}

func (d *driftCheck) findDrift(ctx workflow.Context, out *AgentDriftReport) error {
	opts := workflow.ActivityOptions{StartToCloseTimeout: findDriftTimeout, ScheduleToCloseTimeout: findDriftBound,
		HeartbeatTimeout: findDriftHeartbeat, RetryPolicy: workflows.DeviceRetry, Summary: "compare SAPI intent with CNAPI agents"}
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), agentActs.FindAgentDrift, FindAgentDriftRequest{
		Agents: d.in.Agents, Selection: d.in.Selection, ExcludeServers: d.in.ExcludeServers,
	}).Get(ctx, out)
}

// repairIntents points stale intents at the actual images (a failure is
// logged: the check again reports what is left).
func (d *driftCheck) repairIntents(ctx workflow.Context) {
	d.phase(ctx, workflows.PhaseRepairingIntents, "pointing stale intents at the actual images")
	opts := workflow.ActivityOptions{StartToCloseTimeout: repairTimeout, ScheduleToCloseTimeout: repairBound,
		HeartbeatTimeout: repairHeartbeat, RetryPolicy: workflows.DeviceRetry, Summary: "point stale SAPI intents at the actual images"}
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), agentActs.RepairAgentIntents, d.res.Found.Drift).
		Get(ctx, &d.res.IntentsFixed); err != nil {
		workflow.GetLogger(ctx).Error("repairing intents failed", "error", err)
	}
	d.progress.Done = int64(d.res.IntentsFixed)
}

// removeOrphans deletes the SAPI instances whose server CNAPI no longer
// has (CNAPI leaves them behind). Runs only when the check found some.
func (d *driftCheck) removeOrphans(ctx workflow.Context) {
	if d.res.Found.Counts[DriftOrphanInstance] != 0 {
		d.phase(ctx, workflows.PhaseRemovingOrphans)
		opts := workflow.ActivityOptions{StartToCloseTimeout: repairTimeout, ScheduleToCloseTimeout: repairBound,
			HeartbeatTimeout: repairHeartbeat, RetryPolicy: workflows.DeviceRetry, Summary: "delete SAPI instances of deleted servers"}
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), agentActs.RemoveOrphanInstances, d.res.Found.Drift).
			Get(ctx, &d.res.OrphansRemoved); err != nil {
			workflow.GetLogger(ctx).Error("removing orphaned instances failed", "error", err)
		}
	}
	d.progress.Done += int64(d.res.OrphansRemoved)
}

// repairGroup is one agent image to install on the servers behind their
// intent.
type repairGroup struct {
	agent   string
	image   uuid.UUID
	servers []string
}

// behindIntent groups the servers behind their intent by agent and image,
// in the order the check found them: one AgentInstall each.
func (d *driftCheck) behindIntent() []repairGroup {
	var out []repairGroup
	at := map[[2]string]int{}
	for _, dr := range d.res.Found.Drift {
		if dr.Repair != RepairInstall {
			continue
		}
		k := [2]string{dr.Agent, dr.IntentImage.String()}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, repairGroup{agent: dr.Agent, image: dr.IntentImage})
		}
		out[i].servers = append(out[i].servers, dr.Server.String())
	}
	return out
}

// install runs one repair install as a child AgentInstall. Only a cancel
// of the check stops the repair; a failed install is reported and the
// next one runs.
func (d *driftCheck) install(ctx workflow.Context, g repairGroup) error {
	d.phase(ctx, workflows.PhaseInstalling, fmt.Sprintf("%s on %d servers behind their intent", g.agent, len(g.servers)))
	run := AgentRepairRun{Agent: g.agent, ImageUUID: g.image, Servers: len(g.servers)}
	install := AgentInstallInput{
		Agents:      []AgentRequest{{Name: g.agent, ImageUUID: g.image}},
		Selection:   ServerSelection{Servers: g.servers},
		Concurrency: d.in.Concurrency, MaxFailures: d.in.MaxFailures, MaxFailurePercent: d.in.MaxFailurePercent,
		PollInterval: d.in.PollInterval,
	}
	run.WorkflowID = workflows.WorkflowID(workflows.KindAgentInstall, install.Target())
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:        run.WorkflowID,
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.SAKind.ValueSet(string(workflows.KindAgentInstall)), workflows.SATarget.ValueSet(install.Target()),
			workflows.SAArtifact.ValueSet(install.ArtifactVersion()), workflows.SAState.ValueSet(string(workflows.StateRunning))),
		StaticSummary: fmt.Sprintf("drift repair: %s on %d servers", g.agent, len(g.servers)),
	})
	var out AgentInstallResult
	err := workflow.ExecuteChildWorkflow(cctx, AgentInstall, install).Get(ctx, &out)
	if temporal.IsWorkflowExecutionAlreadyStartedError(err) {
		if adopted, ok, aerr := d.adoptInstall(ctx, run.WorkflowID); ok {
			out, err = adopted, aerr // started by this check before an operator reset it
		}
	}
	run.Outcome, run.Installed, run.Failed = out.Outcome, out.Installed+out.Verified, out.Failed
	if err != nil {
		run.Error = failure.Line(err)
		if run.Outcome == "" {
			run.Outcome = "failed"
		}
		if ctx.Err() != nil {
			d.res.Installs = append(d.res.Installs, run)
			d.res.Outcome = "cancelled during repair"
			return temporal.NewCanceledError(d.res.Outcome)
		}
	}
	d.res.Installs = append(d.res.Installs, run)
	d.progress.Done += int64(run.Installed)
	return nil
}

// driftTotal sums drift counts (order does not matter for a sum).
func driftTotal(counts map[string]int) int {
	total := 0
	//workflowcheck:ignore
	for _, n := range counts {
		total += n
	}
	return total
}
