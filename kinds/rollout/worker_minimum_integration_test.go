package rollout_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// A worker whose configuration requires a signed start, two approvers
// and a gate before every stage of the test kind runs plans that ask for
// less, as anyone who may start a rollout writes them: an unsigned start
// of a plan without gates ends before its first stage, nothing started;
// a signed one stops at a gate the plan never asked for, which alice's
// approval alone does not open (the plan's one approver is raised to the
// worker's two) and bob's does. With FLEETSAGA_RECORD_HISTORIES=1 the
// signed run's history is saved for the replay test.
func TestWorkerMinimumApprovalPolicyOverridesAWeakerPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	keys := map[string]ssh.Signer{"alice": approvaltest.Key(t), "bob": approvaltest.Key(t), "carol": approvaltest.Key(t)}
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, keys)})
	require.NoError(t, err)
	w := worker.New(env.Client, env.TaskQueue, worker.Options{})
	w.RegisterWorkflow(rollout.Rollout)
	w.RegisterWorkflow(rollout.TestUpdate)
	w.RegisterActivity(&rollout.RolloutActivities{Store: env.Store})
	w.RegisterActivity(&activities.ApprovalActivities{Store: env.Store, Keyring: keyring,
		Minimum: approval.Minimum{SignedStart: true, Approvers: 2, GatedKinds: []string{string(rollout.KindTest)}}})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	plan := func(name string) rollout.RolloutInput {
		return rollout.RolloutInput{Name: name + "-" + env.TaskQueue, Stages: []rollout.Stage{
			{Name: "one", Kind: rollout.KindTest, Concurrency: 1, Updates: rollout.TestUpdates(rollout.TestInput{Name: name + "-" + env.TaskQueue, Take: time.Second})},
		}}
	}

	unsigned := plan("min-unsigned")
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: rollout.RolloutWorkflowID(unsigned.Name), TaskQueue: env.TaskQueue}, rollout.Rollout, unsigned)
	require.NoError(t, err)
	err = run.Get(ctx, nil)
	requireApprovalRefused(t, err, approval.ReasonUnsigned)
	_, err = env.Client.DescribeWorkflowExecution(ctx, workflows.WorkflowID(rollout.KindTest, "test/"+unsigned.Name), "")
	require.Error(t, err, "no update started")

	in := plan("min-signed")
	id := rollout.RolloutWorkflowID(in.Name)
	digest, err := in.StartDigest()
	require.NoError(t, err)
	start := approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, PlanDigest: digest, Decision: approval.DecisionStart}, "start", time.Now()), keys["carol"])
	in.StartSignature = &start
	run, err = env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, rollout.Rollout, in)
	require.NoError(t, err)
	gate := awaitGate(ctx, t, env, id, "one")
	require.Equal(t, "2 more approvals", gate.StillNeeded, "the worker's two approvers, not the plan's none")
	approve := func(who string) {
		s := approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, Stage: "one", Run: gate.RunID, PlanDigest: gate.Digest, Decision: approval.DecisionApprove}, "reviewed", time.Now()), keys[who])
		h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
			Args:         []any{workflows.Approval{By: who, Reason: "reviewed", Stage: "one", PlanDigest: gate.Digest, Signed: &s}},
			WaitForStage: client.WorkflowUpdateStageCompleted})
		require.NoError(t, err)
		require.NoError(t, h.Get(ctx, nil))
	}
	approve("alice")
	require.Equal(t, "1 more approval, not by ssh:alice", gateNow(ctx, t, env, id).StillNeeded)
	approve("bob")
	var res rollout.RolloutResult
	require.NoError(t, run.Get(ctx, &res))
	require.Len(t, res.Outcomes, 1)
	require.Equal(t, workflows.StateCompleted, res.Outcomes[0].State)
	replay.Record(t, env.Client, id, run.GetRunID(), "../testdata/histories/rollout-worker-minimum.json")
}
