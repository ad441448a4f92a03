package rollout_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// An operator resets a rollout waiting at a signed gate that needs two
// approvers and four eyes, after alice's approval, to each point. Signed
// approvals are keyed in the ledger by the rollout's original run ID, which
// a reset keeps: the reset run's gate still counts alice's approval (it
// says it needs one more, not by alice or carol), bob's opens it, the
// stage's update runs once, and the ledger holds carol's start and the two
// approvals once each.
func TestRolloutResetAtASignedGate(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	for _, p := range testenv.ResetPoints {
		t.Run(string(p), func(t *testing.T) {
			env := testenv.New(t)
			keys := map[string]ssh.Signer{}
			for _, who := range []string{"alice", "bob", "carol"} {
				keys[who] = approvaltest.Key(t)
			}
			keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, keys)})
			require.NoError(t, err)
			startRolloutWorkerWith(t, env, keyring)

			update := rollout.TestInput{Name: "gated-" + env.TaskQueue, Take: time.Second}
			in := rollout.RolloutInput{Name: "reset-gate-" + env.TaskQueue, Stages: []rollout.Stage{
				{Name: "one", Kind: rollout.KindTest, Concurrency: 1, Approval: true, ApprovalPolicy: &approval.Policy{Approvers: 2, FourEyes: true},
					Updates: rollout.TestUpdates(update)},
			}}
			id := rollout.RolloutWorkflowID(in.Name)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			digest, err := approval.DigestJSON(in)
			require.NoError(t, err)
			start := approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, PlanDigest: digest, Decision: approval.DecisionStart}, "start", time.Now()), keys["carol"])
			signedIn := in
			signedIn.StartSignature = &start
			run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, rollout.Rollout, signedIn)
			require.NoError(t, err)

			approve := func(who string, gate *rollout.StagePlan) error {
				s := approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, Run: gate.RunID, Stage: gate.Stage, PlanDigest: gate.Digest, Decision: approval.DecisionApprove},
					who+" reviewed "+gate.Stage, time.Now()), keys[who])
				h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
					Args:         []any{workflows.Approval{By: who, Reason: who + " reviewed " + gate.Stage, Stage: gate.Stage, PlanDigest: gate.Digest, Signed: &s}},
					WaitForStage: client.WorkflowUpdateStageCompleted})
				require.NoError(t, err)
				return h.Get(ctx, nil)
			}

			gate := awaitGate(ctx, t, env, id, "one")
			require.NoError(t, approve("alice", gate))
			require.Equal(t, "1 more approval, not by ssh:alice or ssh:carol", gateNow(ctx, t, env, id).StillNeeded)
			reset := testenv.ResetWorkflow(t, env.Client, id, p)

			var after *rollout.StagePlan
			require.Eventually(t, func() bool {
				after = gateNow(ctx, t, env, id)
				return after != nil && after.Stage == "one" && after.StillNeeded == "1 more approval, not by ssh:alice or ssh:carol"
			}, 30*time.Second, 100*time.Millisecond, "the reset run's gate does not count alice's approval")
			require.Equal(t, gate.Digest, after.Digest, "the same plan at the gate")
			require.NoError(t, approve("bob", after))

			var res rollout.RolloutResult
			require.NoError(t, reset.Get(ctx, &res))
			require.Len(t, res.Outcomes, 1)
			require.Equal(t, workflows.StateCompleted, res.Outcomes[0].State)
			require.Equal(t, 1, countRuns(ctx, t, env, workflows.WorkflowID(rollout.KindTest, update.Target())), "the gated update ran once")

			got, err := env.Store.Approvals(ctx, id)
			require.NoError(t, err)
			var who []string
			for _, a := range got {
				require.Contains(t, a.Stage, run.GetRunID(), "keyed by the original run")
				who = append(who, a.Principal)
			}
			require.Equal(t, []string{"ssh:carol", "ssh:alice", "ssh:bob"}, who, "the start and each approval recorded once")
			if p == testenv.ResetFirst {
				replay.Record(t, env.Client, id, reset.GetRunID(), "../testdata/histories/rollout-reset-signed-gate.json")
			}
		})
	}
}

// countRuns counts the runs of workflow id that visibility knows.
func countRuns(ctx context.Context, t *testing.T, env *testenv.Env, id string) int {
	t.Helper()
	var n int
	require.Eventually(t, func() bool {
		resp, err := env.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: "WorkflowId = '" + id + "'"})
		if err != nil || len(resp.GetExecutions()) == 0 {
			return false
		}
		n = len(resp.GetExecutions())
		return true
	}, 10*time.Second, 100*time.Millisecond)
	return n
}
