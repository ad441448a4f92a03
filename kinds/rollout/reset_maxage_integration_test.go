package rollout_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// An operator resets a signed rollout to its first workflow task two
// hours after carol signed its start, far past the worker's
// --approval-max-age: the reset run verifies the start again, finds its
// nonce recorded for this very run's start, and continues with it to the
// gate (it does not end "start not verified: Expired"); alice's fresh
// approval then opens the gate and the update runs.
func TestRolloutResetPastTheMaxAgeContinuesWithItsRecordedStart(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	keys := map[string]ssh.Signer{"alice": approvaltest.Key(t), "carol": approvaltest.Key(t)}
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, keys)})
	require.NoError(t, err)
	var later atomic.Int64 // how far the worker's clock is ahead of the test's
	now := func() time.Time { return time.Now().Add(time.Duration(later.Load())) }
	startRolloutWorkerWith(t, env, keyring.WithClock(now))
	resetPastTheMaxAge(t, env, keys, now, func() { later.Store(int64(2 * time.Hour)) })
}

// shortMaxAge is the worker's --approval-max-age in the test below: long
// enough for the start to be verified on a loaded machine, short enough to
// wait out.
const shortMaxAge = 3 * time.Second

// The same with the worker's own clock and a short --approval-max-age in
// its configuration: the reset comes after the max age has passed.
func TestRolloutResetPastAShortMaxAgeContinuesWithItsRecordedStart(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	keys := map[string]ssh.Signer{"alice": approvaltest.Key(t), "carol": approvaltest.Key(t)}
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, keys), MaxAge: shortMaxAge})
	require.NoError(t, err)
	startRolloutWorkerWith(t, env, keyring)
	resetPastTheMaxAge(t, env, keys, time.Now, func() { time.Sleep(shortMaxAge + time.Second) })
}

// resetPastTheMaxAge starts a rollout signed by carol, lets pass() move
// the worker past its max age once it waits at its gate, resets it to its
// first workflow task and has alice approve the reset run's gate: the
// rollout must complete.
func resetPastTheMaxAge(t *testing.T, env *testenv.Env, keys map[string]ssh.Signer, now func() time.Time, pass func()) {
	t.Helper()
	in := rollout.RolloutInput{Name: "reset-max-age-" + env.TaskQueue, Stages: []rollout.Stage{
		{Name: "one", Kind: rollout.KindTest, Concurrency: 1, Approval: true, Updates: rollout.TestUpdates(rollout.TestInput{Name: "max-age-" + env.TaskQueue, Take: time.Second})},
	}}
	id := rollout.RolloutWorkflowID(in.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	digest, err := in.StartDigest()
	require.NoError(t, err)
	start := approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, PlanDigest: digest, Decision: approval.DecisionStart}, "start", now()), keys["carol"])
	in.StartSignature = &start
	_, err = env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, rollout.Rollout, in)
	require.NoError(t, err)
	awaitGate(ctx, t, env, id, "one")

	pass()
	reset := testenv.ResetWorkflow(t, env.Client, id, testenv.ResetFirst)
	var gate *rollout.StagePlan
	require.Eventually(t, func() bool {
		if d, err := env.Client.DescribeWorkflowExecution(ctx, id, reset.GetRunID()); err == nil && d.GetWorkflowExecutionInfo().GetCloseTime() != nil {
			return true // ended: the Get below says how
		}
		gate = gateNow(ctx, t, env, id)
		return gate != nil && gate.Stage == "one"
	}, 30*time.Second, 100*time.Millisecond, "the reset run never reached its gate")
	if gate == nil {
		require.NoError(t, reset.Get(ctx, nil), "the reset run ended at its start")
	}

	s := approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, Stage: "one", Run: gate.RunID, PlanDigest: gate.Digest, Decision: approval.DecisionApprove}, "reviewed", now()), keys["alice"])
	h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
		Args:         []any{workflows.Approval{By: "alice", Reason: "reviewed", Stage: "one", PlanDigest: gate.Digest, Signed: &s}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(ctx, nil))
	var res rollout.RolloutResult
	require.NoError(t, reset.Get(ctx, &res))
	require.Len(t, res.Outcomes, 1)
	require.Equal(t, workflows.StateCompleted, res.Outcomes[0].State)
}
