package workflows

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

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
)

// AgentDriftInput asks for a drift check (and repair).
type AgentDriftInput struct {
	// Agents to check (empty: every agent SAPI knows).
	Agents         []string                   `json:"agents,omitempty"`
	Selection      activities.ServerSelection `json:"selection"`
	ExcludeServers []string                   `json:"excludeServers,omitempty"`
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
	install := AgentInstallInput{Agents: []activities.AgentRequest{{Name: "x"}}, Selection: activities.ServerSelection{All: true},
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
	Outcome string                      `json:"outcome"`
	Found   activities.AgentDriftReport `json:"found"`
	// IntentsFixed counts instances pointed at (or created for) the actual
	// image.
	IntentsFixed int `json:"intentsFixed,omitempty"`
	// OrphansRemoved counts SAPI instances of deleted servers removed.
	OrphansRemoved int              `json:"orphansRemoved,omitempty"`
	Installs       []AgentRepairRun `json:"installs,omitempty"`
	// Remaining is the drift left after the repair.
	Remaining *activities.AgentDriftReport `json:"remaining,omitempty"`
}

// AgentDriftCheck lists servers whose SAPI intent and CNAPI actual state
// disagree and, with Repair, fixes them.
func AgentDriftCheck(ctx workflow.Context, in AgentDriftInput) (AgentDriftResult, error) {
	if err := in.Validate(); err != nil {
		return AgentDriftResult{}, temporal.NewNonRetryableApplicationError(err.Error(), failure.InvalidAgentRequest, nil)
	}
	// A drift check records no ledger attempt: it changes nothing itself
	// (repairs run as AgentInstall updates).
	progress := Progress{Kind: KindAgentDrift, Target: in.Target(), Started: workflow.Now(ctx), Unit: "drifts"}
	l, err := NewLifecycle(ctx, &progress, PhaseCheckingDrift, nil, func() Progress { return progress })
	if err != nil {
		return AgentDriftResult{}, err
	}
	phase := func(p Phase, detail ...string) {
		progress.Message = strings.Join(detail, "")
		l.Step(ctx, p, detail...)
	}
	var res AgentDriftResult
	ended := func(err error) (AgentDriftResult, error) { return res, l.End(ctx, err, Ending{Outcome: res.Outcome}) }
	if err := findDrift(ctx, in, &res.Found); err != nil {
		return ended(err)
	}
	total := driftTotal(res.Found.Counts)
	progress.Total, progress.Counts = int64(total), res.Found.Counts
	if total == 0 {
		res.Outcome = fmt.Sprintf("no drift on %d servers", res.Found.Checked)
		return ended(nil)
	}
	if !in.Repair {
		res.Outcome = fmt.Sprintf("%d drifts on %d servers (not repaired)", total, res.Found.Checked)
		return ended(nil)
	}

	phase(PhaseRepairingIntents, "pointing stale intents at the actual images")
	opts := workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Minute, ScheduleToCloseTimeout: time.Hour,
		HeartbeatTimeout: time.Minute, RetryPolicy: DeviceRetry, Summary: "point stale SAPI intents at the actual images"}
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), agentActs.RepairAgentIntents, res.Found.Drift).
		Get(ctx, &res.IntentsFixed); err != nil {
		workflow.GetLogger(ctx).Error("repairing intents failed", "error", err)
	}
	progress.Done = int64(res.IntentsFixed)
	removeOrphans(ctx, phase, &res)
	progress.Done += int64(res.OrphansRemoved)

	// Servers behind their intent: one AgentInstall per agent and image.
	type key struct {
		agent string
		image uuid.UUID
	}
	groups := map[key][]string{}
	var order []key
	for _, d := range res.Found.Drift {
		if d.Repair != activities.RepairInstall {
			continue
		}
		k := key{d.Agent, d.IntentImage}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], d.Server.String())
	}
	for _, k := range order {
		phase(PhaseInstalling, fmt.Sprintf("%s on %d servers behind their intent", k.agent, len(groups[k])))
		run := AgentRepairRun{Agent: k.agent, ImageUUID: k.image, Servers: len(groups[k])}
		install := AgentInstallInput{
			Agents:      []activities.AgentRequest{{Name: k.agent, ImageUUID: k.image}},
			Selection:   activities.ServerSelection{Servers: groups[k]},
			Concurrency: in.Concurrency, MaxFailures: in.MaxFailures, MaxFailurePercent: in.MaxFailurePercent,
			PollInterval: in.PollInterval,
		}
		run.WorkflowID = WorkflowID(KindAgentInstall, install.Target())
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:        run.WorkflowID,
			ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
			TypedSearchAttributes: temporal.NewSearchAttributes(
				SAKind.ValueSet(string(KindAgentInstall)), SATarget.ValueSet(install.Target()),
				SAArtifact.ValueSet(install.ArtifactVersion()), SAState.ValueSet(string(StateRunning))),
			StaticSummary: fmt.Sprintf("drift repair: %s on %d servers", k.agent, len(groups[k])),
		})
		var out AgentInstallResult
		err := workflow.ExecuteChildWorkflow(cctx, AgentInstall, install).Get(ctx, &out)
		run.Outcome, run.Installed, run.Failed = out.Outcome, out.Installed+out.Verified, out.Failed
		if err != nil {
			run.Error = err.Error()
			if run.Outcome == "" {
				run.Outcome = "failed"
			}
			if ctx.Err() != nil {
				res.Installs = append(res.Installs, run)
				res.Outcome = "cancelled during repair"
				return ended(temporal.NewCanceledError(res.Outcome))
			}
		}
		res.Installs = append(res.Installs, run)
		progress.Done += int64(run.Installed)
	}

	phase(PhaseCheckingAgain)
	var after activities.AgentDriftReport
	if err := findDrift(ctx, in, &after); err != nil {
		return ended(err)
	}
	res.Remaining = &after
	left := driftTotal(after.Counts)
	res.Outcome = fmt.Sprintf("%d drifts found, %d left after repair", total, left)
	return ended(nil)
}

func findDrift(ctx workflow.Context, in AgentDriftInput, out *activities.AgentDriftReport) error {
	opts := workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Minute, ScheduleToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout: 2 * time.Minute, RetryPolicy: DeviceRetry, Summary: "compare SAPI intent with CNAPI agents"}
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), agentActs.FindAgentDrift, activities.FindAgentDriftRequest{
		Agents: in.Agents, Selection: in.Selection, ExcludeServers: in.ExcludeServers,
	}).Get(ctx, out)
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

// removeOrphans deletes the SAPI instances whose server CNAPI no longer
// has (CNAPI leaves them behind). Runs only when the check found some.
func removeOrphans(ctx workflow.Context, phase func(Phase, ...string), res *AgentDriftResult) {
	if res.Found.Counts[activities.DriftOrphanInstance] == 0 {
		return
	}
	phase(PhaseRemovingOrphans)
	opts := workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Minute, ScheduleToCloseTimeout: time.Hour,
		HeartbeatTimeout: time.Minute, RetryPolicy: DeviceRetry, Summary: "delete SAPI instances of deleted servers"}
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), agentActs.RemoveOrphanInstances, res.Found.Drift).
		Get(ctx, &res.OrphansRemoved); err != nil {
		workflow.GetLogger(ctx).Error("removing orphaned instances failed", "error", err)
	}
}
