package agents

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// fakeFleet drives AgentInstall's parent with a fake per-server child: how
// long each server takes and whether it fails, and what ran when.
type fakeFleet struct {
	mu       sync.Mutex
	servers  []ledger.AgentServer
	take     map[string]time.Duration
	fail     map[string]bool
	spans    map[string][2]time.Time
	results  map[string]string
	stopped  int
	svcImage int
	finished []ledger.Finish
}

func newFakeFleet(n int) *fakeFleet {
	f := &fakeFleet{take: map[string]time.Duration{}, fail: map[string]bool{}, spans: map[string][2]time.Time{}, results: map[string]string{}}
	for i := range n {
		f.servers = append(f.servers, ledger.AgentServer{Seq: i + 1, ServerUUID: uuid.NewSHA1(uuid.NameSpaceOID, []byte{byte(i), byte(i >> 8)}),
			Hostname: fmt.Sprintf("cn%03d", i), State: ledger.AgentServerPending})
	}
	return f
}

func (f *fakeFleet) plan() AgentInstallPlan {
	return AgentInstallPlan{
		Agents:   []PlannedAgent{{Name: "vm-agent", ImageUUID: uuid.New(), Version: "1.1.0", ServiceUUID: uuid.New()}},
		Selected: len(f.servers), Pending: len(f.servers), LastSeq: len(f.servers),
	}
}

// child is registered under AgentInstallServer's name.
func (f *fakeFleet) child(ctx workflow.Context, in AgentServerInput) (AgentServerResult, error) {
	start := workflow.Now(ctx)
	take := f.take[in.Hostname]
	if take == 0 {
		take = time.Minute
	}
	if err := workflow.Sleep(ctx, take); err != nil {
		if in.ReportTo != "" { // like the real child: a cancelled server reports too
			dctx, cancel := workflow.NewDisconnectedContext(ctx)
			defer cancel()
			done := AgentServerDone{RolloutID: in.RolloutID, Seq: in.Seq, Result: AgentServerResult{Outcome: AgentOutcomeCancelled}}
			_ = workflow.SignalExternalWorkflow(dctx, in.ReportTo, "", AgentServerDoneSignal, done).Get(dctx, nil)
		}
		return AgentServerResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.spans[in.Hostname] = [2]time.Time{start, workflow.Now(ctx)}
	res := AgentServerResult{Server: in.Server, Hostname: in.Hostname, Outcome: AgentOutcomeInstalled}
	if f.fail[in.Hostname] {
		res.Outcome, res.Error = AgentOutcomeFailed, "task failed"
	}
	f.results[in.Hostname] = res.Outcome
	if in.ReportTo != "" { // the window across runs: report like the real child
		done := AgentServerDone{RolloutID: in.RolloutID, Seq: in.Seq, Result: res}
		_ = workflow.SignalExternalWorkflow(ctx, in.ReportTo, "", AgentServerDoneSignal, done).Get(ctx, nil)
	}
	return res, nil
}

// ended is the ledger's view of in-flight servers: those the fake child
// finished.
func (f *fakeFleet) ended(_ context.Context, r AgentServersEndedRequest) ([]EndedAgentServer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []EndedAgentServer
	for _, s := range r.Servers {
		srv := f.servers[s.Seq-1]
		if o, ok := f.results[srv.Hostname]; ok {
			out = append(out, EndedAgentServer{Seq: s.Seq, Server: srv.ServerUUID, Hostname: srv.Hostname, Outcome: o})
		}
	}
	return out, nil
}

func (f *fakeFleet) maxOverlap() int {
	best := 0
	for _, a := range f.spans {
		n := 0
		for _, b := range f.spans {
			if !b[0].After(a[0]) && b[1].After(a[0]) {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}

func (f *fakeFleet) env(t *testing.T) *testsuite.TestWorkflowEnvironment {
	env := f.newEnv()
	env.OnActivity(agentLedger.FinishAttempt, mock.Anything, mock.Anything).Return(
		func(_ context.Context, fin ledger.Finish) error { f.finished = append(f.finished, fin); return nil })
	plan := f.plan()
	env.OnActivity(agentActs.PlanAgentInstall, mock.Anything, mock.Anything).Return(plan, nil).Maybe()
	env.OnActivity(agentActs.NextAgentServers, mock.Anything, mock.Anything).Return(
		func(_ context.Context, r NextAgentServersRequest) ([]ledger.AgentServer, error) {
			var out []ledger.AgentServer
			for _, s := range f.servers {
				if s.Seq > r.After && len(out) < r.Limit {
					out = append(out, s)
				}
			}
			return out, nil
		})
	env.OnActivity(agentActs.StopAgentRollout, mock.Anything, mock.Anything).Return(
		func(_ context.Context, _ StopAgentRolloutRequest) (int, error) {
			f.stopped++
			return len(f.servers) - len(f.results), nil
		}).Maybe()
	env.OnActivity(agentActs.SummarizeAgentRollout, mock.Anything, mock.Anything).Return(
		func(_ context.Context, _ uuid.UUID) (AgentRolloutSummary, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			c := map[string]int{}
			for _, o := range f.results {
				if o == AgentOutcomeFailed {
					c[ledger.AgentServerFailed]++
				} else {
					c[ledger.AgentServerDone]++
				}
			}
			if f.stopped > 0 {
				c[ledger.AgentServerNotStarted] = len(f.servers) - len(f.results)
			}
			return AgentRolloutSummary{Counts: c}, nil
		})
	env.OnActivity(agentActs.SetAgentServiceImage, mock.Anything, mock.Anything).Return(
		func(_ context.Context, _ SetAgentServiceImageRequest) error { f.svcImage++; return nil }).Maybe()
	return env
}

func vmInput() AgentInstallInput {
	return AgentInstallInput{Agents: []AgentRequest{{Name: "vm-agent"}}, Selection: ServerSelection{All: true}}
}

func TestAgentInstallSlidingWindowDefaultConcurrency(t *testing.T) {
	f := newFakeFleet(60)
	env := f.env(t)
	env.ExecuteWorkflow(AgentInstall, vmInput())
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res AgentInstallResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, 60, res.Installed)
	assert.Equal(t, AgentRolloutCompleted, res.Outcome)
	assert.Equal(t, DefaultAgentConcurrency, f.maxOverlap(), "20 at once by default, not 1 or 5")
	assert.Len(t, f.spans, 60)
	assert.True(t, res.ServiceImageSet, "every server of the datacenter runs the image: the service intent moves")
	assert.Equal(t, 1, f.svcImage)
}

func TestAgentInstallConcurrencyAndNoServiceImageForPartialSelection(t *testing.T) {
	f := newFakeFleet(30)
	env := f.env(t)
	in := vmInput()
	in.Selection = ServerSelection{Traits: map[string]string{"rack": "r1"}}
	in.Concurrency = 7
	env.ExecuteWorkflow(AgentInstall, in)
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, 7, f.maxOverlap())
	assert.Zero(t, f.svcImage, "a partial selection never moves the fleet-wide intent")
}

func TestAgentInstallFailureBudgetStopsNewServers(t *testing.T) {
	f := newFakeFleet(30)
	for _, h := range []string{"cn002", "cn003", "cn004"} {
		f.fail[h] = true
	}
	env := f.env(t)
	in := vmInput()
	in.Concurrency, in.MaxFailures = 2, 1
	env.ExecuteWorkflow(AgentInstall, in)
	err := env.GetWorkflowError()
	require.Error(t, err)
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), err)
	assert.Equal(t, failure.FailureBudget, ae.Type())
	var res AgentInstallResult
	require.NoError(t, ae.Details(&res))
	assert.GreaterOrEqual(t, res.Failed, 2)
	assert.LessOrEqual(t, res.Failed, 1+in.Concurrency, "running servers finish, no new ones start")
	assert.Less(t, len(f.spans), 30)
	assert.Equal(t, 30-len(f.spans), res.NotStarted)
	assert.Equal(t, 1, f.stopped)
	assert.Zero(t, f.svcImage)
}

func TestAgentInstallFailuresWithinPercentBudget(t *testing.T) {
	f := newFakeFleet(20)
	f.fail["cn005"], f.fail["cn006"] = true, true
	env := f.env(t)
	in := vmInput()
	in.MaxFailurePercent = 10 // 2 of 20
	env.ExecuteWorkflow(AgentInstall, in)
	require.NoError(t, env.GetWorkflowError())
	var res AgentInstallResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, AgentRolloutWithFailures, res.Outcome)
	assert.Equal(t, 2, res.Failed)
	assert.Equal(t, 18, res.Installed)
	assert.Len(t, f.spans, 20)
	assert.Zero(t, f.svcImage, "failed servers keep the old image: the fleet-wide intent stays")
}

func TestAgentInstallStragglerWarnedNotKilled(t *testing.T) {
	f := newFakeFleet(10)
	f.take["cn007"] = 30 * time.Minute
	env := f.env(t)
	in := vmInput()
	in.Concurrency = 10
	in.StragglerCheck = time.Minute
	var mid workflows.Progress
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(workflows.ProgressQuery)
		require.NoError(t, err)
		require.NoError(t, v.Get(&mid))
	}, 10*time.Minute)
	env.ExecuteWorkflow(AgentInstall, in)
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, []string{"cn007"}, mid.Stragglers, "warned while still running")
	assert.Equal(t, 1, mid.Counts["running"])
	assert.Equal(t, 9, mid.Counts["done"])
	assert.Equal(t, workflows.PhaseInstalling, mid.Phase, "the straggler is named in Stragglers and the details, not in the phase")
	var res AgentInstallResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, 10, res.Installed, "the straggler finished: warned, not killed")
	assert.Equal(t, []string{"cn007"}, res.Stragglers)
}

func TestAgentInstallContinuesAsNewWithCarriedState(t *testing.T) {
	f := newFakeFleet(25)
	f.fail["cn003"] = true
	in := vmInput()
	in.ChildrenPerRun, in.MaxFailures = 10, 5
	runs := 0
	for {
		runs++
		env := f.env(t)
		if runs > 1 { // as Temporal starts a run continued as new
			env.SetContinuedExecutionRunID(fmt.Sprintf("run-%d", runs-1))
		}
		env.ExecuteWorkflow(AgentInstall, in)
		err := env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if !errors.As(err, &can) {
			require.NoError(t, err)
			var res AgentInstallResult
			require.NoError(t, env.GetWorkflowResult(&res))
			assert.Equal(t, 24, res.Installed)
			assert.Equal(t, 1, res.Failed)
			assert.Equal(t, runs, res.Runs)
			break
		}
		var next AgentInstallInput
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
		require.NotNil(t, next.Carry)
		assert.Equal(t, runs*10, next.Carry.Cursor, "each run starts its share")
		in = next
		require.Less(t, runs, 5)
	}
	assert.Equal(t, 3, runs)
	assert.Len(t, f.spans, 25, "every server ran exactly once across runs")
}

func TestAgentInstallPausedStartsNothingNew(t *testing.T) {
	f := newFakeFleet(10)
	env := f.env(t)
	in := vmInput()
	in.Concurrency = 2
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(workflows.PauseSignal, nil) }, 30*time.Second)
	var paused workflows.Progress
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(workflows.ProgressQuery)
		require.NoError(t, err)
		require.NoError(t, v.Get(&paused))
		env.SignalWorkflow(workflows.ResumeSignal, nil)
	}, time.Hour)
	env.ExecuteWorkflow(AgentInstall, in)
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, workflows.StatePaused, paused.State)
	assert.Equal(t, 2, paused.Counts["done"], "the two running servers finished, nothing new started")
	assert.Len(t, f.spans, 10)
}

func TestAgentInstallInvalidPlanTouchesNothing(t *testing.T) {
	f := newFakeFleet(5)
	env := f.newEnv()
	env.OnActivity(agentLedger.FinishAttempt, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(agentActs.PlanAgentInstall, mock.Anything, mock.Anything).Return(AgentInstallPlan{},
		temporal.NewNonRetryableApplicationError("unknown servers (not in CNAPI): cn-typo", failure.InvalidAgentRequest, nil))
	in := vmInput()
	in.Selection = ServerSelection{Servers: []string{"cn001", "cn-typo"}}
	env.ExecuteWorkflow(AgentInstall, in)
	err := env.GetWorkflowError()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cn-typo")
	assert.Empty(t, f.spans)
}

func TestAgentInstallInputValidate(t *testing.T) {
	ok := vmInput()
	require.NoError(t, ok.Validate())
	assert.Equal(t, "dc/vm-agent", ok.Target())
	assert.Equal(t, "vm-agent@newest", ok.ArtifactVersion())
	two := AgentInstallInput{Agents: []AgentRequest{{Name: "vm-agent"}, {Name: "cn-agent"}}, AllAgents: true, Selection: ok.Selection}
	assert.Equal(t, "dc/all-agents+cn-agent+vm-agent", two.Target())
	bad := []AgentInstallInput{
		{Selection: ok.Selection},
		{Agents: ok.Agents},
		{Agents: ok.Agents, Selection: ok.Selection, Concurrency: -1},
		{Agents: ok.Agents, Selection: ok.Selection, MaxFailures: 2, MaxFailurePercent: 5},
		{Agents: ok.Agents, Selection: ok.Selection, MaxFailurePercent: 101},
		{Agents: ok.Agents, Selection: ok.Selection, StragglerFactor: 0.5},
		{Agents: []AgentRequest{{Name: "a"}, {Name: "a"}}, Selection: ok.Selection},
	}
	for i, in := range bad {
		assert.Error(t, in.Validate(), "case %d", i)
	}
}

// --- the per-server child ---

type serverCalls struct {
	mu    sync.Mutex
	calls []string
}

func (c *serverCalls) add(s string) {
	c.mu.Lock()
	c.calls = append(c.calls, s)
	c.mu.Unlock()
}

func serverEnv(t *testing.T, have []triton.Agent, prepErr, installErr error) (*testsuite.TestWorkflowEnvironment, *serverCalls, *FinishAgentServerRequest) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(AgentInstallServer)
	env.RegisterActivity(&AgentActivities{})
	env.RegisterActivity(&activities.LedgerActivities{})
	calls := &serverCalls{}
	var fin FinishAgentServerRequest
	env.OnActivity(agentLedger.RecordIntent, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(agentLedger.AppendEvent, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(agentActs.PrepareAgentServer, mock.Anything, mock.Anything).Return(AgentServerState{Hostname: "cn1", Agents: have}, prepErr)
	env.OnActivity(agentActs.InstallAgentImage, mock.Anything, mock.Anything).Return(
		func(_ context.Context, r InstallAgentRequest) (InstallAgentResult, error) {
			calls.add("install " + r.Agent.Name)
			if installErr != nil && r.Agent.Name == "vm-agent" {
				return InstallAgentResult{}, installErr
			}
			return InstallAgentResult{TaskID: "t-" + r.Agent.Name}, nil
		}).Maybe()
	// CNAPI's record, then the SAPI intent, in one activity (their order
	// inside it: TestRecordAgentOnServerMovesRecordThenIntent).
	env.OnActivity(agentActs.RecordAgentOnServer, mock.Anything, mock.Anything).Return(
		func(_ context.Context, r RefreshAgentRequest) (SetAgentIntentResult, error) {
			calls.add("refresh " + r.Agent.Name)
			calls.add("intent " + r.Agent.Name)
			return SetAgentIntentResult{InstanceUUID: uuid.New(), Changed: true}, nil
		}).Maybe()
	env.OnActivity(agentActs.FinishAgentServer, mock.Anything, mock.Anything).Return(
		func(_ context.Context, r FinishAgentServerRequest) error { fin = r; return nil })
	return env, calls, &fin
}

var (
	cnAgent = PlannedAgent{Name: "cn-agent", ImageUUID: uuid.New(), Version: "2", ServiceUUID: uuid.New()}
	vmAgent = PlannedAgent{Name: "vm-agent", ImageUUID: uuid.New(), Version: "2", ServiceUUID: uuid.New()}
)

func TestAgentServerSagaOrderCoreAgentAlone(t *testing.T) {
	env, calls, fin := serverEnv(t, nil, nil, nil)
	env.ExecuteWorkflow(AgentInstallServer, AgentServerInput{RolloutID: uuid.New(), Server: uuid.New(), Hostname: "cn1",
		Agents: OrderAgents([]PlannedAgent{vmAgent, cnAgent})})
	require.NoError(t, env.GetWorkflowError())
	var res AgentServerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, AgentOutcomeInstalled, res.Outcome)
	assert.Equal(t, []string{
		"install cn-agent", "refresh cn-agent", "intent cn-agent",
		"install vm-agent", "refresh vm-agent", "intent vm-agent",
	}, calls.calls, "core agent first and alone; intent only after actual")
	assert.Equal(t, ledger.StateCompleted, fin.State)
}

func TestAgentServerAlreadyAtImageIsVerifiedNotReinstalled(t *testing.T) {
	have := []triton.Agent{{Name: "vm-agent", ImageUUID: vmAgent.ImageUUID, UUID: uuid.New()}}
	env, calls, _ := serverEnv(t, have, nil, nil)
	env.ExecuteWorkflow(AgentInstallServer, AgentServerInput{Server: uuid.New(), Agents: []PlannedAgent{vmAgent}})
	require.NoError(t, env.GetWorkflowError())
	var res AgentServerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, AgentOutcomeVerified, res.Outcome)
	assert.Equal(t, []string{"refresh vm-agent", "intent vm-agent"}, calls.calls)
}

func TestAgentServerFailedInstallKeepsIntent(t *testing.T) {
	fail := temporal.NewNonRetryableApplicationError("task failed: sha1 mismatch", failure.AgentTaskFailed, nil)
	env, calls, fin := serverEnv(t, nil, nil, fail)
	env.ExecuteWorkflow(AgentInstallServer, AgentServerInput{Server: uuid.New(), Agents: []PlannedAgent{cnAgent, vmAgent}})
	require.NoError(t, env.GetWorkflowError(), "a failed server is a result")
	var res AgentServerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, AgentOutcomeFailed, res.Outcome)
	assert.Equal(t, failure.AgentTaskFailed, res.ErrorType)
	assert.Equal(t, []string{"install cn-agent", "refresh cn-agent", "intent cn-agent", "install vm-agent"}, calls.calls,
		"vm-agent's intent is not moved")
	assert.Equal(t, ledger.StateFailed, fin.State)
	// One failure line, as everywhere an operator reads one: no activity
	// error around it, no SDK "(type: …, retryable: …)" framing.
	want := failure.AgentTaskFailed + ": task failed: sha1 mismatch"
	assert.Equal(t, want, res.Error)
	assert.Equal(t, want, res.Steps[len(res.Steps)-1].Error)
	assert.Equal(t, want, fin.Error)
}

func TestAgentServerOfflineIsNotTouched(t *testing.T) {
	off := temporal.NewNonRetryableApplicationError("server cn1 is not running", failure.ServerNotRunning, nil)
	env, calls, fin := serverEnv(t, nil, off, nil)
	env.ExecuteWorkflow(AgentInstallServer, AgentServerInput{Server: uuid.New(), Agents: []PlannedAgent{vmAgent}})
	require.NoError(t, env.GetWorkflowError())
	var res AgentServerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, AgentOutcomeFailed, res.Outcome)
	assert.Equal(t, failure.ServerNotRunning, res.ErrorType)
	assert.Empty(t, calls.calls)
	assert.Equal(t, ledger.StateFailed, fin.State)
}

func TestAgentServerOnlyIfPresentSkipsAbsentAgent(t *testing.T) {
	marlinLike := vmAgent
	marlinLike.OnlyIfPresent = true
	env, calls, _ := serverEnv(t, nil, nil, nil)
	env.ExecuteWorkflow(AgentInstallServer, AgentServerInput{Server: uuid.New(), Agents: []PlannedAgent{marlinLike}})
	require.NoError(t, env.GetWorkflowError())
	var res AgentServerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, "absent", res.Steps[0].Outcome)
	assert.Empty(t, calls.calls)
}

func TestAgentServerWaitsWhileAnotherUpdateHoldsTheServer(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(AgentInstallServer)
	env.RegisterActivity(&AgentActivities{})
	env.RegisterActivity(&activities.LedgerActivities{})
	busy := temporal.NewNonRetryableApplicationError("target busy", failure.TargetBusy, nil)
	env.OnActivity(agentLedger.RecordIntent, mock.Anything, mock.Anything).Return(busy).Times(3)
	env.OnActivity(agentLedger.RecordIntent, mock.Anything, mock.Anything).Return(nil).Once()
	env.OnActivity(agentLedger.AppendEvent, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(agentActs.PrepareAgentServer, mock.Anything, mock.Anything).Return(AgentServerState{}, nil)
	env.OnActivity(agentActs.InstallAgentImage, mock.Anything, mock.Anything).Return(InstallAgentResult{TaskID: "t"}, nil)
	env.OnActivity(agentActs.RecordAgentOnServer, mock.Anything, mock.Anything).Return(SetAgentIntentResult{}, nil)
	env.OnActivity(agentActs.FinishAgentServer, mock.Anything, mock.Anything).Return(nil)
	env.ExecuteWorkflow(AgentInstallServer, AgentServerInput{Server: uuid.New(), Agents: []PlannedAgent{vmAgent}})
	require.NoError(t, env.GetWorkflowError())
	var res AgentServerResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, AgentOutcomeInstalled, res.Outcome)
	env.AssertExpectations(t)
}

// --- drift ---

func TestAgentDriftCheckRepairs(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(AgentDriftCheck)
	var installs []AgentInstallInput
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in AgentInstallInput) (AgentInstallResult, error) {
		installs = append(installs, in)
		return AgentInstallResult{Outcome: AgentRolloutCompleted, Installed: len(in.Selection.Servers)}, nil
	}, workflow.RegisterOptions{Name: "AgentInstall"})
	env.RegisterActivity(&AgentActivities{})
	img := uuid.New()
	srvA, srvB, srvC := uuid.New(), uuid.New(), uuid.New()
	found := AgentDriftReport{Checked: 3, Counts: map[string]int{DriftMismatch: 2, DriftMissingInstance: 1},
		Drift: []AgentDrift{
			{Server: srvA, Agent: "vm-agent", Kind: DriftMismatch, IntentImage: img, Repair: RepairInstall},
			{Server: srvB, Agent: "vm-agent", Kind: DriftMismatch, IntentImage: img, Repair: RepairInstall},
			{Server: srvC, Agent: "vm-agent", Kind: DriftMissingInstance, Repair: RepairIntent},
		}}
	env.OnActivity(agentActs.FindAgentDrift, mock.Anything, mock.Anything).Return(found, nil).Once()
	env.OnActivity(agentActs.FindAgentDrift, mock.Anything, mock.Anything).Return(AgentDriftReport{Checked: 3, Counts: map[string]int{}}, nil).Once()
	env.OnActivity(agentActs.RepairAgentIntents, mock.Anything, mock.Anything).Return(1, nil)
	env.ExecuteWorkflow(AgentDriftCheck, AgentDriftInput{Selection: ServerSelection{All: true}, Repair: true, Concurrency: 5})
	require.NoError(t, env.GetWorkflowError())
	var res AgentDriftResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, 1, res.IntentsFixed)
	require.Len(t, installs, 1)
	assert.Equal(t, []string{srvA.String(), srvB.String()}, installs[0].Selection.Servers)
	assert.Equal(t, img, installs[0].Agents[0].ImageUUID)
	assert.Equal(t, 5, installs[0].Concurrency)
	require.NotNil(t, res.Remaining)
	assert.Contains(t, res.Outcome, "0 left")
	env.AssertExpectations(t)
}

// A repair whose install fails says why in one line, as every other
// failure an operator reads (it carried the SDK's whole child and
// "(type: …, retryable: …)" framing).
func TestAgentDriftRepairFailureIsOneLine(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(AgentDriftCheck)
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in AgentInstallInput) (AgentInstallResult, error) {
		return AgentInstallResult{}, temporal.NewNonRetryableApplicationError("1 servers failed, budget 0", failure.FailureBudget, nil)
	}, workflow.RegisterOptions{Name: "AgentInstall"})
	env.RegisterActivity(&AgentActivities{})
	img := uuid.New()
	found := AgentDriftReport{Checked: 1, Counts: map[string]int{DriftMismatch: 1},
		Drift: []AgentDrift{{Server: uuid.New(), Agent: "vm-agent", Kind: DriftMismatch, IntentImage: img, Repair: RepairInstall}}}
	env.OnActivity(agentActs.FindAgentDrift, mock.Anything, mock.Anything).Return(found, nil)
	env.ExecuteWorkflow(AgentDriftCheck, AgentDriftInput{Selection: ServerSelection{All: true}, Repair: true})
	var res AgentDriftResult
	if err := env.GetWorkflowError(); err == nil {
		require.NoError(t, env.GetWorkflowResult(&res))
	} else {
		var ae *temporal.ApplicationError
		require.ErrorAs(t, err, &ae)
		require.NoError(t, ae.Details(&res))
	}
	require.Len(t, res.Installs, 1)
	assert.Equal(t, failure.FailureBudget+": 1 servers failed, budget 0", res.Installs[0].Error)
}

func TestAgentDriftCheckReportOnly(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(AgentDriftCheck)
	env.RegisterActivity(&AgentActivities{})
	env.OnActivity(agentActs.FindAgentDrift, mock.Anything, mock.Anything).Return(AgentDriftReport{Checked: 2,
		Counts: map[string]int{DriftNotInstalled: 1}, Drift: []AgentDrift{{Kind: DriftNotInstalled}}}, nil).Once()
	env.ExecuteWorkflow(AgentDriftCheck, AgentDriftInput{Agents: []string{"vm-agent"}, Selection: ServerSelection{All: true}})
	require.NoError(t, env.GetWorkflowError())
	var res AgentDriftResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Contains(t, res.Outcome, "not repaired")
	assert.Nil(t, res.Remaining)
	env.AssertExpectations(t)
}

func TestAgentInstallCancelStopsAndRecords(t *testing.T) {
	f := newFakeFleet(10)
	env := f.env(t)
	in := vmInput()
	in.Concurrency = 2
	env.RegisterDelayedCallback(env.CancelWorkflow, 90*time.Second)
	env.ExecuteWorkflow(AgentInstall, in)
	err := env.GetWorkflowError()
	require.Error(t, err)
	assert.True(t, temporal.IsCanceledError(err), err)
	assert.Equal(t, 1, f.stopped, "the rest of the plan is marked not started")
	require.NotEmpty(t, f.finished)
	assert.Equal(t, ledger.StateCancelled, f.finished[len(f.finished)-1].State)
	assert.Len(t, f.spans, 2, "only the first two servers finished before the cancel")
}

// newEnv is an SDK test environment running AgentInstall over this fake
// fleet's servers, with the ledger's intent accepted.
func (f *fakeFleet) newEnv() *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(AgentInstall)
	env.RegisterWorkflowWithOptions(f.child, workflow.RegisterOptions{Name: "AgentInstallServer"})
	env.RegisterActivity(&AgentActivities{})
	env.RegisterActivity(&activities.LedgerActivities{})
	env.OnActivity(agentLedger.RecordIntent, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(agentLedgerActs.ClaimAgents, mock.Anything, mock.Anything).Return(nil).Maybe()
	env.OnActivity(agentLedgerActs.AgentServersEnded, mock.Anything, mock.Anything).Return(f.ended).Maybe()
	return env
}
