package agents_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
)

// installActivity is a server child's long step: start the agent_install
// task (or resume the ledgered one) and wait for it in CNAPI.
const installActivity = "InstallAgentImage"

// toolStack is 3 servers, the first one slow (~27 s at speed-up 100, under
// cn-agent's 36 s task timeout), all installed at once, on a stack of its
// own namespace (testenv.Parallel).
func toolStack(t *testing.T, seed int64) (*agentStack, agents.AgentInstallInput, uuid.UUID) {
	t.Helper()
	d := spec.GenerateDatacenter(3, seed)
	d.Servers[0].InstallSlowness = 60
	env := testenv.Parallel(t)
	sp := &spec.Spec{Seed: 3, SpeedUp: 100, Timings: spec.DefaultTimings(), Datacenter: d}
	require.NoError(t, sp.Validate())
	sim := env.StartFleetsim(sp)
	s := &agentStack{env: env, sim: sim, dc: d, dep: workerapp.Deps{Fleet: env.Endpoints(sim),
		AgentReportWait: testReportWait, AgentSelfUpdateWait: testSelfUpdateWait}}
	s.worker()
	img, _ := d.ImageFor("vm-agent", spec.GeneratedNewVersion)
	in := agents.AgentInstallInput{Agents: []agents.AgentRequest{{Name: "vm-agent", ImageUUID: img.UUID}},
		Selection: agents.ServerSelection{All: true}, Concurrency: 3, ChildrenPerRun: 3, MaxFailures: 1,
		PollInterval: time.Second, StragglerCheck: time.Second}
	return s, in, img.UUID
}

// An operator uses Temporal's activity tools on the slow server's install
// step while its agent_install task runs in CNAPI: pauses it past its
// heartbeat timeout (4 poll intervals + 5 s: 9 s) and unpauses it; resets
// it, with and without its heartbeats; shortens its timeout below the
// task's time. Each time the step is asked again and resumes the task it
// ledgered instead of starting another: every server installed once (one
// agent_install task each in fleetsim), the plan rows succeeded, the
// rollout completed with no failure, as without the tool.
func TestAgentInstallTaskWaitUnderTheActivityTools(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	for i, c := range []struct {
		name    string
		use     func(t *testing.T, s *agentStack, id, activityID string)
		retried bool // the tool ended the running attempt
	}{
		{"pause-past-heartbeat-then-unpause", func(t *testing.T, s *agentStack, id, aid string) {
			testenv.PauseActivity(t, s.env.Client, id, aid)
			time.Sleep(10 * time.Second)
			testenv.UnpauseActivity(t, s.env.Client, id, aid)
		}, true},
		{"reset", func(t *testing.T, s *agentStack, id, aid string) {
			testenv.ResetActivity(t, s.env.Client, id, aid, false)
		}, false},
		{"reset-heartbeats", func(t *testing.T, s *agentStack, id, aid string) {
			testenv.ResetActivity(t, s.env.Client, id, aid, true)
		}, false},
		{"timeout-shortened", func(t *testing.T, s *agentStack, id, aid string) {
			testenv.ShortenActivity(t, s.env.Client, id, aid, 3*time.Second)
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, in, img := toolStack(t, 50+int64(i))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			run := s.start(t, ctx, in)
			rollout := rolloutOf(t, s, in)
			slow := s.dc.Servers[0].UUID
			child := run.GetID() + "/" + rollout.String() + "/" + slow.String()
			var pa *workflowpb.PendingActivityInfo
			require.Eventually(t, func() bool {
				desc, err := s.env.Client.DescribeWorkflowExecution(ctx, child, "")
				if err != nil {
					return false // the child is not started yet
				}
				for _, p := range desc.GetPendingActivities() {
					if p.GetActivityType().GetName() == installActivity && p.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
						pa = p
						return true
					}
				}
				return false
			}, time.Minute, 50*time.Millisecond, "no %s started in %s", installActivity, child)
			c.use(t, s, child, pa.GetActivityId())
			usedAt := time.Now()

			var res agents.AgentInstallResult
			require.NoError(t, run.Get(ctx, &res))
			assert.Equal(t, agents.AgentRolloutCompleted, res.Outcome)
			assert.Equal(t, 3, res.Installed)
			assert.Zero(t, res.Failed)
			tr := s.truth(t)
			tasks := map[uuid.UUID]int{}
			for _, rec := range tr.Installs {
				tasks[rec.ServerUUID]++
				if rec.ServerUUID == slow {
					assert.True(t, usedAt.Before(rec.Finished), "the tool was used while the slow server's task ran")
				}
			}
			for _, srv := range s.dc.Servers {
				assert.Equal(t, 1, tasks[srv.UUID], "server %s: one agent_install task", srv.Hostname)
			}
			rows := planRows(t, s, rollout)
			require.Len(t, rows, 3)
			for id, r := range rows {
				assert.Equal(t, ledger.AgentServerDone, r.State, "plan row of %s", id)
			}
			ok := succeeded(t, s.env.Store, rollout)
			assert.Len(t, ok, 3)
			checkAgreement(t, tr, "vm-agent", img, ok)
			if c.retried {
				assert.Greater(t, testenv.LastActivityAttempt(t, s.env.Client, child, installActivity), int32(1), "the tool ended the running attempt")
			}
		})
	}
}
