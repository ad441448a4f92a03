package agents_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// windowStack is 8 servers, the first one slow, installed 2 at a time, 3
// per run (so the first run's slow server is still running when the run
// has started its share). At speed-up 100 an install takes ~450 ms times
// its slowness, and cn-agent's task timeout is 36 s.
func windowStack(t *testing.T, seed int64, slowness float64) (*agentStack, agents.AgentInstallInput, uuid.UUID) {
	t.Helper()
	d := spec.GenerateDatacenter(8, seed)
	d.Servers[0].InstallSlowness = slowness
	s := newAgentStack(t, d, 100)
	s.worker()
	img, _ := d.ImageFor("vm-agent", spec.GeneratedNewVersion)
	in := agents.AgentInstallInput{Agents: []agents.AgentRequest{{Name: "vm-agent", ImageUUID: img.UUID}},
		Selection: agents.ServerSelection{All: true}, Concurrency: 2, ChildrenPerRun: 3, MaxFailures: 1,
		PollInterval: time.Second, StragglerCheck: time.Second}
	return s, in, img.UUID
}

// planRows is the rollout's plan in the ledger, by server.
func planRows(t *testing.T, s *agentStack, rollout uuid.UUID) map[uuid.UUID]ledger.AgentServer {
	t.Helper()
	rows, err := s.env.Store.AgentServers(context.Background(), rollout, "", 0)
	require.NoError(t, err)
	out := map[uuid.UUID]ledger.AgentServer{}
	for _, r := range rows {
		out[r.ServerUUID] = r
	}
	return out
}

// rolloutOf waits for the rollout's ledger attempt (its ID is the rollout's).
func rolloutOf(t *testing.T, s *agentStack, in agents.AgentInstallInput) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.Eventually(t, func() bool {
		atts, err := s.env.Store.List(context.Background(), ledger.ListFilter{Kind: string(workflows.KindAgentInstall), Target: in.Target()})
		if err != nil || len(atts) == 0 {
			return false
		}
		id = atts[0].ID
		return true
	}, time.Minute, 100*time.Millisecond)
	return id
}

// continuedAsNew waits until the rollout's current run is not its first.
func continuedAsNew(t *testing.T, s *agentStack, id, firstRun string) {
	t.Helper()
	require.Eventually(t, func() bool {
		desc, err := s.env.Client.DescribeWorkflowExecution(context.Background(), id, "")
		return err == nil && desc.GetWorkflowExecutionInfo().GetExecution().GetRunId() != firstRun
	}, 90*time.Second, 200*time.Millisecond, "the rollout continued as new while its slow server still ran")
}

// The window does not drain at continue-as-new: servers of the next runs
// start while the first run's slow server still installs; every server is
// installed once and the summary counts them all.
func TestAgentInstallWindowKeepsRunningAcrossContinueAsNew(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	s, in, img := windowStack(t, 41, 20) // the slow server: ~9 s
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := s.start(t, ctx, in)
	firstRun := run.GetRunID()
	var res agents.AgentInstallResult
	require.NoError(t, run.Get(ctx, &res))
	assert.Equal(t, agents.AgentRolloutCompleted, res.Outcome)
	assert.Equal(t, 8, res.Installed)
	assert.Zero(t, res.Failed)
	assert.GreaterOrEqual(t, res.Runs, 3)

	rows := planRows(t, s, res.RolloutID)
	slowSrv := s.dc.Servers[0].UUID
	require.LessOrEqual(t, rows[slowSrv].Seq, in.ChildrenPerRun, "the slow server is started by the first run")
	tr := s.truth(t)
	var slowDone time.Time
	for _, rec := range tr.Installs {
		if rec.ServerUUID == slowSrv {
			slowDone = rec.Finished
		}
	}
	require.False(t, slowDone.IsZero())
	startedMeanwhile := 0
	for _, rec := range tr.Installs {
		if rows[rec.ServerUUID].Seq > in.ChildrenPerRun && rec.Started.Before(slowDone) {
			startedMeanwhile++
		}
	}
	assert.Positive(t, startedMeanwhile, "servers of the next runs started while the first run's slow server installed")
	ok := succeeded(t, s.env.Store, res.RolloutID)
	assert.Len(t, ok, 8)
	assert.Len(t, tr.Installs, 8, "every server installed exactly once")
	checkAgreement(t, tr, "vm-agent", img, ok)

	// With FLEETSAGA_RECORD_HISTORIES=1: the first run (continued as new
	// with the slow server in flight), the last one (which books it from
	// its report; the run followed to the end), and the slow server's child
	// (which reports to the rollout).
	replay.Record(t, s.env.Client, run.GetID(), firstRun, "../testdata/histories/agent-install-window-first-run.json")
	replay.Record(t, s.env.Client, run.GetID(), run.GetRunID(), "../testdata/histories/agent-install-window-last-run.json")
	child := run.GetID() + "/" + res.RolloutID.String() + "/" + slowSrv.String()
	replay.Record(t, s.env.Client, child, "", "../testdata/histories/agent-install-server-reports.json")
}

// A cancel after continue-as-new reaches the child carried from the first
// run: its ledger row ends cancelled and nothing is installed afterwards.
func TestAgentInstallCancelAfterContinueAsNewCancelsCarriedChildren(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	s, in, _ := windowStack(t, 42, 60) // the slow server: ~27 s, cancelled before
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := s.start(t, ctx, in)
	rollout := rolloutOf(t, s, in)
	continuedAsNew(t, s, run.GetID(), run.GetRunID())
	require.NoError(t, s.env.Client.CancelWorkflow(ctx, run.GetID(), ""))
	err := run.Get(ctx, nil)
	require.Error(t, err)
	var ce *temporal.CanceledError
	assert.ErrorAs(t, err, &ce)
	ended := time.Now()

	rows := planRows(t, s, rollout)
	slow := rows[s.dc.Servers[0].UUID]
	assert.Equal(t, ledger.AgentServerFailed, slow.State)
	assert.Equal(t, agents.AgentOutcomeCancelled, slow.Outcome, "the carried child was cancelled")
	for _, r := range rows {
		assert.NotContains(t, []string{ledger.AgentServerPending, ledger.AgentServerRunning}, r.State, "%s still open", r.Hostname)
	}
	child := run.GetID() + "/" + rollout.String() + "/" + s.dc.Servers[0].UUID.String()
	desc, err := s.env.Client.DescribeWorkflowExecution(ctx, child, "")
	require.NoError(t, err)
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, desc.GetWorkflowExecutionInfo().GetStatus())
	time.Sleep(2 * time.Second) // anything still running would start installs now
	for _, rec := range s.truth(t).Installs {
		assert.True(t, rec.Started.Before(ended), "%s installed after the cancel", rec.ServerUUID)
	}
}

// A carried child terminated by an operator never reports: the rollout
// learns its end from the ledger (its row is ended failed) and still ends.
func TestAgentInstallTerminatedCarriedChildDoesNotHangTheRollout(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	s, in, _ := windowStack(t, 43, 60)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := s.start(t, ctx, in)
	rollout := rolloutOf(t, s, in)
	continuedAsNew(t, s, run.GetID(), run.GetRunID())
	child := run.GetID() + "/" + rollout.String() + "/" + s.dc.Servers[0].UUID.String()
	require.NoError(t, s.env.Client.TerminateWorkflow(ctx, child, "", "operator"))

	var res agents.AgentInstallResult
	require.NoError(t, run.Get(ctx, &res))
	assert.Equal(t, agents.AgentRolloutWithFailures, res.Outcome)
	assert.Equal(t, 7, res.Installed)
	assert.Equal(t, 1, res.Failed)
	slow := planRows(t, s, rollout)[s.dc.Servers[0].UUID]
	assert.Equal(t, ledger.AgentServerFailed, slow.State)
	assert.Contains(t, slow.Reason, "Terminated")
}

// An operator terminates the rollout while the window's children install
// (they are abandoned by design, to outlive continue-as-new). Each child
// notices its rollout is gone within one check period, stops, ends its
// ledger attempt and plan row, and releases its server: nothing installs
// after that, and nothing installed is left unbooked.
func TestAgentInstallTerminatedRolloutStopsItsChildren(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	s, in, img := windowStack(t, 44, 60) // the slow server: ~27 s
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := s.start(t, ctx, in)
	rollout := rolloutOf(t, s, in)
	continuedAsNew(t, s, run.GetID(), run.GetRunID())
	require.NoError(t, s.env.Client.TerminateWorkflow(ctx, run.GetID(), "", "operator: stop everything"))

	// Every child stops within a check period or two (1 s here).
	stillRunning := func() []string {
		var open []string
		for _, r := range planRows(t, s, rollout) {
			if r.State == ledger.AgentServerRunning {
				open = append(open, r.Hostname+" (plan row)")
			}
		}
		for _, srv := range s.dc.Servers {
			active, err := s.env.Store.ActiveForTarget(ctx, agents.ServerTarget(srv.UUID))
			require.NoError(t, err)
			if active != nil {
				open = append(open, srv.Hostname+" (attempt)")
			}
		}
		return open
	}
	require.Eventually(t, func() bool { return len(stillRunning()) == 0 }, 10*time.Second, 100*time.Millisecond,
		"children still installing after their rollout was terminated")
	stopped := time.Now()
	slow := planRows(t, s, rollout)[s.dc.Servers[0].UUID]
	assert.Equal(t, ledger.AgentServerFailed, slow.State)
	assert.Equal(t, agents.AgentOutcomeCancelled, slow.Outcome, "the slow server was stopped, not finished")
	time.Sleep(2 * time.Second) // anything still running would start installs now
	tr := s.truth(t)
	for _, rec := range tr.Installs {
		assert.True(t, rec.Started.Before(stopped), "%s installed after its child stopped", rec.ServerUUID)
	}
	checkAgreement(t, tr, "vm-agent", img, succeeded(t, s.env.Store, rollout))
}

// An operator resets the rollout's current run (continued as new, its
// window full) to each point. The reset run keeps its rollout ID, finds
// the children it already started still running or done, and books them
// instead of failing them: every server is installed exactly once and the
// rollout completes.
func TestAgentInstallResetMidWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	for i, p := range testenv.ResetPoints {
		t.Run(string(p), func(t *testing.T) {
			s, in, img := windowStack(t, int64(45+i), 20) // the slow server: ~9 s
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			run := s.start(t, ctx, in)
			rollout := rolloutOf(t, s, in)
			continuedAsNew(t, s, run.GetID(), run.GetRunID())
			require.Eventually(t, func() bool { return completedTasks(ctx, s, run.GetID()) >= 2 },
				time.Minute, 50*time.Millisecond, "the next run never completed a workflow task")
			reset := testenv.ResetWorkflow(t, s.env.Client, run.GetID(), p)

			var res agents.AgentInstallResult
			require.NoError(t, s.env.Client.GetWorkflow(ctx, reset.GetID(), "").Get(ctx, &res))
			assert.Equal(t, agents.AgentRolloutCompleted, res.Outcome, "%+v", res)
			assert.Equal(t, rollout, res.RolloutID, "the reset run keeps its rollout")
			assert.Zero(t, res.Failed)
			tr := s.truth(t)
			assert.Len(t, tr.Installs, 8, "every server installed exactly once")
			checkAgreement(t, tr, "vm-agent", img, succeeded(t, s.env.Store, rollout))
		})
	}
}

// completedTasks counts the completed workflow tasks of id's current run.
func completedTasks(ctx context.Context, s *agentStack, id string) int {
	n := 0
	it := s.env.Client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return n
		}
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			n++
		}
	}
	return n
}
