package rollout_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// An approver (or anyone with the approver's Temporal role) floods a
// signed rollout's gate with approve updates, as `temporal workflow
// update execute` sends them: a 1.5 MB reason (a request under the
// server's 2 MB limit, so the server admits it to the workflow), an unsigned approval once
// the start was verified, and then refused approvals (a key the worker
// does not trust) one after another. The oversized and unsigned ones are
// refused before they reach the history; after the refusal limit the gate
// accepts no more and says so, even alice's valid approval. Through all
// of it the rollout keeps running, its gate closed and its history small.
func TestApproveUpdatesCannotFloodAGate(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	keys := map[string]ssh.Signer{"alice": approvaltest.Key(t), "carol": approvaltest.Key(t)}
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, keys)})
	require.NoError(t, err)
	startRolloutWorkerWith(t, env, keyring)
	mallory := approvaltest.Key(t)

	in := rollout.RolloutInput{Name: "flood-" + env.TaskQueue, Stages: []rollout.Stage{
		{Name: "one", Kind: rollout.KindTest, Concurrency: 1, Approval: true, Updates: rollout.TestUpdates(rollout.TestInput{Name: "flood-" + env.TaskQueue, Take: time.Second})},
	}}
	id := rollout.RolloutWorkflowID(in.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Cleanup(func() { _ = env.Client.TerminateWorkflow(context.Background(), id, "", "test over") })
	digest, err := in.StartDigest()
	require.NoError(t, err)
	start := approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, PlanDigest: digest, Decision: approval.DecisionStart}, "start", time.Now()), keys["carol"])
	in.StartSignature = &start
	_, err = env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, rollout.Rollout, in)
	require.NoError(t, err)
	gate := awaitGate(ctx, t, env, id, "one")

	send := func(ap workflows.Approval) error {
		ap.Stage, ap.PlanDigest = gate.Stage, gate.Digest
		h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
			Args: []any{ap}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			return err
		}
		return h.Get(ctx, nil)
	}
	signed := func(key ssh.Signer, reason string) *approval.Signed {
		s := approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, Stage: gate.Stage, PlanDigest: gate.Digest, Decision: approval.DecisionApprove}, reason, time.Now()), key)
		return &s
	}
	before := historyEvents(t, env, id)

	huge := strings.Repeat("x", 1500<<10)
	err = send(workflows.Approval{By: "alice", Reason: huge, Signed: signed(keys["alice"], "ok")})
	require.ErrorContains(t, err, "reason is 1536000 bytes")
	err = send(workflows.Approval{By: strings.Repeat("a", 1<<20), Reason: "ok", Signed: signed(keys["alice"], "ok")})
	require.ErrorContains(t, err, "by is 1048576 bytes")
	err = send(workflows.Approval{By: "alice", Reason: "trust me"})
	require.ErrorContains(t, err, "its start was signed, so only signed approvals count")
	require.Equal(t, before, historyEvents(t, env, id), "rejected updates left nothing in the history")

	for i := range rollout.MaxRefusedApprovals {
		err := send(workflows.Approval{By: "mallory", Reason: fmt.Sprint("try ", i), Signed: signed(mallory, fmt.Sprint("try ", i))})
		requireApprovalRefused(t, err, approval.ReasonUnknownKey)
	}
	err = send(workflows.Approval{By: "alice", Reason: "reviewed", Signed: signed(keys["alice"], "reviewed")})
	require.ErrorContains(t, err, fmt.Sprintf("refused %d approvals and accepts no more", rollout.MaxRefusedApprovals))

	d, err := env.Client.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus(), "the rollout was not terminated")
	require.Less(t, d.GetWorkflowExecutionInfo().GetHistorySizeBytes(), int64(4<<20), "the history stays small")
	now := gateNow(ctx, t, env, id)
	require.NotNil(t, now)
	require.Equal(t, "1 more approval", now.StillNeeded, "the gate is still closed")
}
