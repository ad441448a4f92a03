// Package agents is the agent kinds: the install (install*.go: a parent
// that fans out over servers in windows, continuing as new) and its
// per-server child (server.go), and the drift check (drift.go), with their
// activities (activities*.go) and dry runs (plan.go, plan_activities.go).
package agents

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Fan-out defaults and bounds.
const (
	// DefaultAgentConcurrency is how many servers install at once (the
	// original tool's 5, or 1 for a single agent, made rollouts crawl).
	DefaultAgentConcurrency = 20
	maxAgentConcurrency     = 500
	// DefaultStragglerFactor: a server slower than this × the median of
	// finished servers is reported as a straggler.
	DefaultStragglerFactor = 3.0
	// minFinishedForMedian: below this many finished servers the median
	// means little; no straggler is reported.
	minFinishedForMedian = 3
	// defaultStragglerCheck is how often running servers are compared with
	// the median (a timer only while servers run).
	defaultStragglerCheck = 30 * time.Second
	// defaultChildrenPerRun bounds the children one run starts before it
	// continues as new: ~6 history events each keeps a run far below the
	// 10,240-event warning.
	defaultChildrenPerRun = 500
	// planPage is how many servers one read of the plan returns.
	planPage = 200
	// keptDurations bounds the finished-server durations carried across
	// runs for the median.
	keptDurations = 1000
	maxStragglers = 100
)

// AgentInstallInput is one agent rollout.
type AgentInstallInput struct {
	// Agents to install (name, and image UUID or nil for the newest).
	Agents []AgentRequest `json:"agents,omitempty"`
	// AllAgents adds every agent SAPI knows at its newest image, updating
	// only the servers that run it. marlin only when named in Agents.
	AllAgents      bool            `json:"allAgents,omitempty"`
	Selection      ServerSelection `json:"selection"`
	ExcludeServers []string        `json:"excludeServers,omitempty"`
	ExcludeAgents  []string        `json:"excludeAgents,omitempty"`
	// Concurrency is how many servers install at once (default 20).
	Concurrency int `json:"concurrency,omitempty"`
	// MaxFailures or MaxFailurePercent (of the servers to install) is the
	// failure budget: one more failure stops the rollout from starting new
	// servers. Both zero: the first failure stops it.
	MaxFailures       int     `json:"maxFailures,omitempty"`
	MaxFailurePercent float64 `json:"maxFailurePercent,omitempty"`
	// StragglerFactor (default 3): slower than factor × median is a
	// straggler (warned about, never killed).
	StragglerFactor float64 `json:"stragglerFactor,omitempty"`
	// PollInterval is the cn-agent task wait between heartbeats (default 5 s).
	PollInterval time.Duration `json:"pollInterval,omitempty"`
	// StragglerCheck is how often running servers are checked (default 30 s).
	StragglerCheck time.Duration `json:"stragglerCheck,omitempty"`
	// ChildrenPerRun bounds the servers one run starts before continuing as
	// new (default 500).
	ChildrenPerRun int `json:"childrenPerRun,omitempty"`

	// Carry is the state handed over by continue-as-new (nil on start).
	Carry *AgentInstallCarry `json:"carry,omitempty"`
}

// Target is "dc/<agents>": one rollout per agent set at a time.
func (in AgentInstallInput) Target() string {
	names := make([]string, 0, len(in.Agents)+1)
	for _, ag := range in.Agents {
		names = append(names, ag.Name)
	}
	sort.Strings(names)
	if in.AllAgents {
		names = append([]string{"all-agents"}, names...)
	}
	return "dc/" + strings.Join(names, "+")
}

// ArtifactVersion lists the requested images ("newest" when unpinned).
func (in AgentInstallInput) ArtifactVersion() string {
	parts := make([]string, 0, len(in.Agents)+1)
	for _, ag := range in.Agents {
		img := "newest"
		if ag.ImageUUID != uuid.Nil {
			img = ag.ImageUUID.String()
		}
		parts = append(parts, ag.Name+"@"+img)
	}
	sort.Strings(parts)
	if in.AllAgents {
		parts = append(parts, "all@newest")
	}
	return strings.Join(parts, ",")
}

// Validate checks the input without I/O.
func (in AgentInstallInput) Validate() error {
	var errs []error
	if err := in.Selection.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(in.Agents) == 0 && !in.AllAgents {
		errs = append(errs, errors.New("name at least one agent, or ask for all agents"))
	}
	seen := map[string]bool{}
	for _, ag := range in.Agents {
		if ag.Name == "" || seen[ag.Name] {
			errs = append(errs, fmt.Errorf("agent names must be present and unique (%q)", ag.Name))
		}
		seen[ag.Name] = true
	}
	if in.Concurrency < 0 || in.Concurrency > maxAgentConcurrency {
		errs = append(errs, fmt.Errorf("concurrency must be within 1..%d (0: default %d)", maxAgentConcurrency, DefaultAgentConcurrency))
	}
	if in.MaxFailures < 0 || in.MaxFailurePercent < 0 || in.MaxFailurePercent > 100 {
		errs = append(errs, errors.New("the failure budget must be >= 0 (percent within 0..100)"))
	}
	if in.MaxFailures > 0 && in.MaxFailurePercent > 0 {
		errs = append(errs, errors.New("give the failure budget as a count or a percent, not both"))
	}
	if in.StragglerFactor != 0 && in.StragglerFactor <= 1 {
		errs = append(errs, errors.New("the straggler factor must be > 1"))
	}
	if in.PollInterval < 0 || in.StragglerCheck < 0 || in.ChildrenPerRun < 0 {
		errs = append(errs, errors.New("poll interval, straggler check and children per run must be >= 0"))
	}
	return errors.Join(errs...)
}

// ValidateStart implements workflows.Continues: Carry is the state a run
// hands its next one at continue-as-new, never a plan's or an operator's.
// A first run given one would skip planning (no image checks, no
// selection, no claim) and install the carried plan.
func (in AgentInstallInput) ValidateStart() error {
	if in.Carry != nil {
		return errors.New("carry is the state an agent install hands its next run at continue-as-new: a plan or a start may not set it")
	}
	return nil
}

func (in *AgentInstallInput) defaults() {
	if in.Concurrency == 0 {
		in.Concurrency = DefaultAgentConcurrency
	}
	if in.StragglerFactor == 0 {
		in.StragglerFactor = DefaultStragglerFactor
	}
	if in.PollInterval == 0 {
		in.PollInterval = defaultAgentPoll
	}
	if in.StragglerCheck == 0 {
		in.StragglerCheck = defaultStragglerCheck
	}
	if in.ChildrenPerRun == 0 {
		in.ChildrenPerRun = defaultChildrenPerRun
	}
}

// AgentInstallCarry is what one run hands the next.
type AgentInstallCarry struct {
	RolloutID uuid.UUID        `json:"rolloutId"`
	Plan      AgentInstallPlan `json:"plan"`
	// Cursor is the plan sequence number of the last server started.
	Cursor     int             `json:"cursor"`
	Installed  int             `json:"installed"`
	Verified   int             `json:"verified"`
	Failed     int             `json:"failed"`
	Durations  []time.Duration `json:"durations,omitempty"`
	Stragglers []string        `json:"stragglers,omitempty"`
	Started    time.Time       `json:"started"`
	Runs       int             `json:"runs"`
	Paused     bool            `json:"paused,omitempty"`
	// InFlight are the servers whose children still run: they outlive the
	// run and report their end to the next one.
	InFlight []InFlightServer `json:"inFlight,omitempty"`
}

// Rollout outcomes.
const (
	AgentRolloutCompleted    = "completed"
	AgentRolloutWithFailures = "completed with failures within budget"
	AgentRolloutBudget       = "stopped: failure budget exceeded"
	AgentRolloutNothing      = "nothing to do"
)

// AgentInstallResult summarises a rollout (full lists are in the ledger).
type AgentInstallResult struct {
	RolloutID  uuid.UUID      `json:"rolloutId"`
	Outcome    string         `json:"outcome"`
	Agents     []PlannedAgent `json:"agents"`
	Selected   int            `json:"selected"`
	Installed  int            `json:"installed"`
	Verified   int            `json:"verified"`
	Failed     int            `json:"failed"`
	Skipped    int            `json:"skipped"`
	Excluded   int            `json:"excluded"`
	NotStarted int            `json:"notStarted"`
	// FailedServers and SkippedServers are samples (at most 50 each).
	FailedServers   []ledger.AgentServer `json:"failedServers,omitempty"`
	SkippedServers  []SkippedServer      `json:"skippedServers,omitempty"`
	Stragglers      []string             `json:"stragglers,omitempty"`
	ServiceImageSet bool                 `json:"serviceImageSet,omitempty"`
	Runs            int                  `json:"runs"`
}

// AgentInstall installs agent images across a datacenter's servers: it
// validates and plans up front (into the ledger), then runs one
// AgentInstallServer child per server in a sliding window, stops starting
// servers once the failure budget is exceeded, warns about stragglers, and
// continues as new every few hundred servers so 10,000 fit in history;
// servers still running then are carried into the next run, not waited for.
func AgentInstall(ctx workflow.Context, in AgentInstallInput) (AgentInstallResult, error) {
	r := &agentRollout{in: in}
	if err := r.setup(ctx); err != nil {
		return AgentInstallResult{}, err
	}
	return r.run(ctx)
}

type agentRollout struct {
	in       AgentInstallInput
	c        *AgentInstallCarry
	progress workflows.Progress
	l        *workflows.Lifecycle
	running  []InFlightServer
	budget   int
	stopped  bool
	starting int  // children whose start is not yet recorded
	settling bool // no more servers start: waiting for those in flight
	reports  workflow.ReceiveChannel
}

// InFlightServer is a server whose child runs.
type InFlightServer struct {
	Seq      int       `json:"seq"`
	Hostname string    `json:"hostname"`
	Started  time.Time `json:"started"`
	ChildID  string    `json:"childId,omitempty"` // set once Temporal started it
	Flagged  bool      `json:"flagged,omitempty"`
}

func (r *agentRollout) setup(ctx workflow.Context) error {
	if err := r.in.Validate(); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), failure.InvalidAgentRequest, nil)
	}
	if err := r.refuseStartedWithCarry(ctx); err != nil {
		return err
	}
	r.in.defaults()
	r.c = r.in.Carry
	if r.c == nil {
		// Derived like an attempt ID: a run reset to its start keeps it.
		r.c = &AgentInstallCarry{Started: workflow.Now(ctx), RolloutID: workflows.DerivedID(ctx, "rollout")}
	}
	r.c.Runs++
	r.running, r.c.InFlight = r.c.InFlight, nil
	r.progress = workflows.Progress{Kind: workflows.KindAgentInstall, Target: r.in.Target(), Artifact: r.in.ArtifactVersion(),
		Started: r.c.Started, Unit: "servers", Counts: map[string]int{}}
	if r.c.Paused {
		r.progress.State = workflows.StatePaused
	}
	r.refresh(ctx)
	// The first run plans; the next ones (continued as new) go on installing.
	first := workflows.PhasePlanning
	if r.c.Runs > 1 {
		first = workflows.PhaseInstalling
	}
	l, err := workflows.NewLifecycle(ctx, &r.progress, first, workflows.LedgerWriter{}, func() workflows.Progress {
		r.refresh(ctx)
		return r.progress
	})
	if err != nil {
		return err
	}
	r.l = l
	if r.c.Runs > 1 {
		r.l.AdoptAttempt(r.attempt(ctx)) // recorded by the first run
	}
	workflows.ListenPauseResume(ctx, r.setPaused)
	return nil
}

// carryOnStartVersion marks the installs that refuse a carry on their
// first run (one no run continued into). It is read only for such an
// input, which no legitimate first run has: every other run records no
// marker, and a run started with one before it replays without the marker and
// goes on as it did. The DefaultVersion branch may go once no install
// older than it runs.
const carryOnStartVersion = "refuse-carry-on-first-run"

// refuseStartedWithCarry refuses a carry that no continue-as-new handed
// over: given by a plan or a start, it would skip planning and install
// the carried plan (ValidateStart). A run reset keeps its first event, and
// with it the run it continued from.
func (r *agentRollout) refuseStartedWithCarry(ctx workflow.Context) error {
	err := r.in.ValidateStart()
	if err == nil || workflow.GetInfo(ctx).ContinuedExecutionRunID != "" {
		return nil
	}
	if workflow.GetVersion(ctx, carryOnStartVersion, workflow.DefaultVersion, 1) < 1 {
		return nil
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), failure.InvalidAgentRequest, nil)
}

// attempt is the rollout's ledger attempt (its ID is the rollout ID, which
// keys the plan).
func (r *agentRollout) attempt(ctx workflow.Context) ledger.Attempt {
	a := workflows.AttemptFor(ctx, r.c.RolloutID, 1, workflows.KindAgentInstall, r.in.Target(), r.in.ArtifactVersion())
	a.UpdateID = a.WorkflowID + "#" + r.c.RolloutID.String()
	return a
}

func (r *agentRollout) setPaused(ctx workflow.Context, p bool) {
	r.c.Paused = p
	r.progress.State = workflows.StateRunning
	if p {
		r.progress.State = workflows.StatePaused
	}
	workflows.SetSearchState(ctx, r.progress.State, workflows.Phase(r.progress.Phase))
}

func (r *agentRollout) run(ctx workflow.Context) (AgentInstallResult, error) {
	if r.c.Runs == 1 {
		if err := r.plan(ctx); err != nil {
			return r.planFailed(ctx, err)
		}
	}
	r.budget = r.failureBudget()
	more, err := r.fanOut(ctx)
	if err != nil {
		return r.end(ctx, err)
	}
	if more {
		r.l.Phase(ctx, workflows.PhaseContinuingAsNew, fmt.Sprintf("after %d servers", r.c.Cursor))
		next := r.in
		r.carryInFlight(ctx)
		next.Carry = r.c
		return AgentInstallResult{}, workflow.NewContinueAsNewError(ctx, AgentInstall, next)
	}
	return r.end(ctx, nil)
}

// plan records the rollout's intent and validates and stores its plan
// before any server is touched.
func (r *agentRollout) plan(ctx workflow.Context) error {
	if err := r.l.RecordIntent(ctx, r.attempt(ctx)); err != nil {
		return err
	}
	// A run reset to before the end of its rollout records a new one.
	r.c.RolloutID = r.l.AttemptID()
	opts := workflow.ActivityOptions{
		StartToCloseTimeout:    10 * time.Minute,
		ScheduleToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:       2 * time.Minute,
		RetryPolicy:            workflows.DeviceRetry,
		Summary:                "validate images and plan servers",
	}
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), agentActs.PlanAgentInstall,
		PlanAgentInstallRequest{RolloutID: r.c.RolloutID, Agents: r.in.Agents, AllAgents: r.in.AllAgents,
			Selection: r.in.Selection, ExcludeServers: r.in.ExcludeServers, ExcludeAgents: r.in.ExcludeAgents}).Get(ctx, &r.c.Plan)
	if err != nil {
		return err
	}
	if err := r.claimAgents(ctx); err != nil {
		return err
	}
	labels := make([]string, len(r.c.Plan.Agents))
	for i, ag := range r.c.Plan.Agents {
		labels[i] = ag.Label()
	}
	r.progress.Artifact = strings.Join(labels, ",")
	if err := workflow.UpsertTypedSearchAttributes(ctx, workflows.SAArtifact.ValueSet(r.progress.Artifact)); err != nil {
		workflow.GetLogger(ctx).Warn("upsert artifact failed", "error", err)
	}
	for _, s := range r.c.Plan.SkippedSample {
		workflow.GetLogger(ctx).Warn("server skipped, not touched", "server", s.UUID, "hostname", s.Hostname, "reason", s.Reason)
	}
	return nil
}

// claimAgents holds the planned agents on the planned servers until the
// rollout ends: a rollout that shares an agent on a server with another
// active one is refused (TargetBusy) before it touches anything.
func (r *agentRollout) claimAgents(ctx workflow.Context) error {
	names := make([]string, len(r.c.Plan.Agents))
	for i, ag := range r.c.Plan.Agents {
		names[i] = ag.Name
	}
	return workflow.ExecuteActivity(workflows.LedgerOptions(ctx), agentLedgerActs.ClaimAgents,
		ClaimAgentsRequest{RolloutID: r.c.RolloutID, Agents: names}).Get(ctx, nil)
}

// planFailed ends a rollout whose planning failed or was cancelled: no
// server was started.
func (r *agentRollout) planFailed(ctx workflow.Context, err error) (AgentInstallResult, error) {
	res := AgentInstallResult{RolloutID: r.c.RolloutID, Runs: r.c.Runs}
	err = r.l.End(ctx, err, workflows.Ending{})
	res.Outcome = r.progress.Outcome
	return res, err
}

// failureBudget is how many failed servers the rollout tolerates.
func (r *agentRollout) failureBudget() int {
	if r.in.MaxFailurePercent > 0 {
		return int(math.Floor(r.in.MaxFailurePercent / 100 * float64(r.c.Plan.Pending)))
	}
	return r.in.MaxFailures
}

func (r *agentRollout) overBudget() bool { return r.c.Failed > r.budget }

// fanOut runs this run's share of the plan in a sliding window that
// stays full across continue-as-new (install_window.go). It reports
// whether servers remain for the next run.
func (r *agentRollout) fanOut(ctx workflow.Context) (more bool, err error) {
	return r.fanOutAcrossRuns(ctx)
}

// childOptions: one child per server, its workflow ID derived from the
// rollout's and the server's.
func (r *agentRollout) childOptions(ctx workflow.Context, srv ledger.AgentServer, onClose enumspb.ParentClosePolicy) workflow.ChildWorkflowOptions {
	parent := workflow.GetInfo(ctx).WorkflowExecution.ID
	return workflow.ChildWorkflowOptions{
		WorkflowID:          parent + "/" + r.c.RolloutID.String() + "/" + srv.ServerUUID.String(),
		ParentClosePolicy:   onClose,
		WaitForCancellation: true,
		// A server's child runs once per rollout: a run reset by an operator
		// finds the one it started (running or ended) instead of running
		// the server again.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.SAKind.ValueSet(string(workflows.KindAgentInstall)), workflows.SATarget.ValueSet(ServerTarget(srv.ServerUUID)),
			workflows.SAArtifact.ValueSet(r.progress.Artifact), workflows.SAState.ValueSet(string(workflows.StateRunning))),
		StaticSummary: fmt.Sprintf("agents %s on %s", r.progress.Artifact, srv.Hostname),
	}
}

func (r *agentRollout) childInput(srv ledger.AgentServer) AgentServerInput {
	return AgentServerInput{RolloutID: r.c.RolloutID, Seq: srv.Seq, Server: srv.ServerUUID, Hostname: srv.Hostname,
		Agents: r.c.Plan.Agents, PollInterval: r.in.PollInterval}
}

// done books a finished server (once: a server no longer in flight was
// booked already, e.g. from the ledger before its report came).
func (r *agentRollout) done(ctx workflow.Context, seq int, res AgentServerResult) {
	i := slices.IndexFunc(r.running, func(rs InFlightServer) bool { return rs.Seq == seq })
	if i < 0 {
		return
	}
	srv := r.running[i]
	r.running = slices.Delete(r.running, i, i+1)
	started := srv.Started
	log := workflow.GetLogger(ctx)
	switch res.Outcome {
	case AgentOutcomeInstalled:
		r.c.Installed++
	case AgentOutcomeVerified:
		r.c.Verified++
	case AgentOutcomeCancelled:
		return
	default:
		r.c.Failed++
		log.Warn("server failed", "server", res.Server, "hostname", srv.Hostname, "error", res.Error)
		return
	}
	d := workflow.Now(ctx).Sub(started)
	if med, ok := r.median(); ok && float64(d) > r.in.StragglerFactor*float64(med) {
		r.straggler(ctx, srv.Hostname, d, med)
	}
	r.c.Durations = append(r.c.Durations, d)
	if n := len(r.c.Durations); n > keptDurations {
		r.c.Durations = r.c.Durations[n-keptDurations:]
	}
}

// median of the finished servers' durations.
func (r *agentRollout) median() (time.Duration, bool) {
	if len(r.c.Durations) < minFinishedForMedian {
		return 0, false
	}
	d := slices.Clone(r.c.Durations)
	slices.Sort(d)
	return d[len(d)/2], true
}

// stragglerLoop checks running servers against the median while any run.
func (r *agentRollout) stragglerLoop(ctx workflow.Context) {
	for {
		if err := workflow.Await(ctx, func() bool { return len(r.running) > 0 }); err != nil {
			return
		}
		if err := workflow.Sleep(ctx, r.in.StragglerCheck); err != nil {
			return
		}
		r.bookEndedFromLedger(ctx)
		med, ok := r.median()
		if !ok {
			continue
		}
		now := workflow.Now(ctx)
		for i := range r.running {
			rs := &r.running[i]
			if d := now.Sub(rs.Started); !rs.Flagged && float64(d) > r.in.StragglerFactor*float64(med) {
				rs.Flagged = true
				r.straggler(ctx, rs.Hostname, d, med)
			}
		}
	}
}

// straggler warns in the log, the progress query and the Web UI (phase).
func (r *agentRollout) straggler(ctx workflow.Context, host string, d, med time.Duration) {
	if slices.Contains(r.c.Stragglers, host) {
		return
	}
	workflow.GetLogger(ctx).Warn("straggler: server is far slower than its peers",
		"hostname", host, "elapsed", d, "median", med, "factor", r.in.StragglerFactor)
	if len(r.c.Stragglers) < maxStragglers {
		r.c.Stragglers = append(r.c.Stragglers, host)
	}
	r.l.Step(ctx, workflows.PhaseInstalling, fmt.Sprintf("%d straggler(s), latest %s (%s vs median %s)", len(r.c.Stragglers), host,
		d.Round(time.Second), med.Round(time.Second)))
}

// refresh recomputes the progress view.
func (r *agentRollout) refresh(ctx workflow.Context) {
	p := &r.progress
	p.Total = int64(r.c.Plan.Pending)
	p.Done = int64(r.c.Installed + r.c.Verified + r.c.Failed)
	p.Counts = map[string]int{
		"done": r.c.Installed + r.c.Verified, "installed": r.c.Installed, "verified": r.c.Verified,
		"running": len(r.running), "failed": r.c.Failed, "skipped": r.c.Plan.Skipped,
	}
	p.Stragglers = slices.Clone(r.c.Stragglers)
	p.ETA = time.Time{}
	if med, ok := r.median(); ok && !r.stopped {
		left := int64(r.c.Plan.Pending) - p.Done
		waves := math.Ceil(float64(left) / float64(max(r.in.Concurrency, 1)))
		p.ETA = workflow.Now(ctx).Add(time.Duration(waves * float64(med)))
	}
	p.Message = fmt.Sprintf("%d selected, %d skipped, %d excluded; failure budget %d", r.c.Plan.Selected, r.c.Plan.Skipped, r.c.Plan.Excluded, r.budget)
}

// end summarises from the ledger, moves the fleet-wide intent when every
// server of the datacenter runs the images, and ends the rollout's attempt.
func (r *agentRollout) end(ctx workflow.Context, runErr error) (AgentInstallResult, error) {
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	cancelled := runErr != nil && (temporal.IsCanceledError(runErr) || ctx.Err() != nil)
	res := AgentInstallResult{RolloutID: r.c.RolloutID, Agents: r.c.Plan.Agents, Selected: r.c.Plan.Selected,
		Excluded: r.c.Plan.Excluded, Stragglers: r.c.Stragglers, SkippedServers: r.c.Plan.SkippedSample, Runs: r.c.Runs}
	if r.stopped || cancelled {
		reason := "failure budget exceeded"
		if cancelled {
			reason = "rollout cancelled"
		}
		_ = workflow.ExecuteActivity(workflows.LedgerOptions(dctx), agentActs.StopAgentRollout,
			StopAgentRolloutRequest{RolloutID: r.c.RolloutID, Reason: reason}).Get(dctx, nil)
	}
	var sum AgentRolloutSummary
	if err := workflow.ExecuteActivity(workflows.LedgerOptions(dctx), agentActs.SummarizeAgentRollout, r.c.RolloutID).Get(dctx, &sum); err != nil {
		workflow.GetLogger(ctx).Error("could not summarise the rollout from the ledger", "error", err)
	}
	res.Installed, res.Verified = r.c.Installed, r.c.Verified
	res.Failed = sum.Counts[ledger.AgentServerFailed]
	res.Skipped = sum.Counts[ledger.AgentServerSkipped]
	res.NotStarted = sum.Counts[ledger.AgentServerNotStarted]
	res.FailedServers = sum.FailedSample
	switch {
	case cancelled:
		res.Outcome = "cancelled"
		return r.ended(ctx, res, runErr)
	case runErr != nil:
		res.Outcome = "failed: " + failure.Line(runErr)
		return r.ended(ctx, res, runErr)
	case r.stopped:
		res.Outcome = AgentRolloutBudget
		msg := fmt.Sprintf("%d servers failed, budget %d; %d not started", res.Failed, r.budget, res.NotStarted)
		return r.ended(ctx, res, temporal.NewNonRetryableApplicationError(res.Outcome+": "+msg, failure.FailureBudget, nil, res))
	}
	res.Outcome = AgentRolloutCompleted
	if r.c.Plan.Pending == 0 {
		res.Outcome = AgentRolloutNothing
	} else if res.Failed > 0 {
		res.Outcome = AgentRolloutWithFailures
	}
	// The fleet-wide intent moves only when every server runs the image.
	if r.in.Selection.All && len(r.in.ExcludeServers) == 0 && r.c.Plan.Excluded == 0 &&
		res.Failed == 0 && res.Skipped == 0 && res.NotStarted == 0 && r.c.Plan.Pending > 0 {
		res.ServiceImageSet = true
		for _, ag := range r.c.Plan.Agents {
			err := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, workflow.ActivityOptions{
				StartToCloseTimeout: time.Minute, ScheduleToCloseTimeout: 15 * time.Minute, RetryPolicy: workflows.DeviceRetry,
			}), agentActs.SetAgentServiceImage, SetAgentServiceImageRequest{ServiceUUID: ag.ServiceUUID, ImageUUID: ag.ImageUUID}).Get(dctx, nil)
			if err != nil {
				res.ServiceImageSet = false
				workflow.GetLogger(ctx).Error("could not set the service's image", "agent", ag.Name, "error", err)
			}
		}
	}
	return r.ended(ctx, res, nil)
}

// ended ends the rollout through the lifecycle (its ledger attempt, its
// search state) once the summary is known.
func (r *agentRollout) ended(ctx workflow.Context, res AgentInstallResult, err error) (AgentInstallResult, error) {
	r.refresh(ctx)
	e := workflows.Ending{Outcome: res.Outcome}
	if res.Outcome == AgentRolloutBudget {
		e.FailedOutcome = res.Outcome // the ledger says why the rollout stopped
	}
	return res, r.l.End(ctx, err, e)
}
