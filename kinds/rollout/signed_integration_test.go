package rollout_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// A rollout on a real Temporal server, a real ledger and a worker with a
// keyring: carol signs the start; at the first gate an unsigned approval,
// one by an unknown key and one signed for another digest are refused
// and change nothing, and alice's signed approval opens it, the ledger
// holding her principal, key fingerprint and signature. The second gate
// needs two distinct approvers and four eyes: alice's first-gate approval
// replayed there, carol's (she started the rollout) and alice's second
// one are refused, alice's counts and the gate says what it still needs,
// bob's opens it. With FLEETSAGA_RECORD_HISTORIES=1 its history is saved
// for the replay test.
func TestRolloutSignedApprovalsOnRealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	keys := map[string]ssh.Signer{}
	for _, who := range []string{"alice", "bob", "carol", "mallory"} {
		keys[who] = approvaltest.Key(t)
	}
	allowed := approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": keys["alice"], "bob": keys["bob"], "carol": keys["carol"]})
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: allowed})
	require.NoError(t, err)
	startRolloutWorkerWith(t, env, keyring)

	in := rollout.RolloutInput{Name: "signed", Stages: []rollout.Stage{
		{Name: "one", Kind: rollout.KindTest, Concurrency: 1, Approval: true, Updates: rollout.TestUpdates(rollout.TestInput{Name: "a", Take: time.Second})},
		{Name: "two", Kind: rollout.KindTest, Concurrency: 1, Approval: true, ApprovalPolicy: &approval.Policy{Approvers: 2, FourEyes: true},
			Updates: rollout.TestUpdates(rollout.TestInput{Name: "b", Take: time.Second})},
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

	sign := func(who string, gate *rollout.StagePlan, digest string) *approval.Signed {
		s := approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, Run: gate.RunID, Stage: gate.Stage, PlanDigest: digest, Decision: approval.DecisionApprove},
			who+" reviewed "+gate.Stage, time.Now()), keys[who])
		return &s
	}
	approve := func(gate *rollout.StagePlan, by string, s *approval.Signed) error {
		h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
			Args:         []any{workflows.Approval{By: by, Reason: by + " reviewed " + gate.Stage, Stage: gate.Stage, PlanDigest: gate.Digest, Signed: s}},
			WaitForStage: client.WorkflowUpdateStageCompleted})
		require.NoError(t, err)
		return h.Get(ctx, nil)
	}
	approvals := func() []ledger.Approval {
		all, err := env.Store.Approvals(ctx, id)
		require.NoError(t, err)
		return all
	}
	refused := func(gate *rollout.StagePlan, what string, want approval.Reason, err error) {
		t.Helper()
		var app *temporal.ApplicationError
		require.ErrorAs(t, err, &app, what)
		require.Equal(t, failure.ApprovalRefused, app.Type(), what)
		var reason string
		require.NoError(t, app.Details(&reason))
		require.Equal(t, string(want), reason, "%s: %v", what, err)
		now := gateNow(ctx, t, env, id)
		require.NotNil(t, now, what)
		require.Equal(t, gate.Stage, now.Stage, "%s changed the gate", what)
	}

	one := awaitGate(ctx, t, env, id, "one")
	require.Equal(t, "1 more approval", one.StillNeeded)
	afterStart := approvals()
	require.Len(t, afterStart, 1, "the signed start is recorded")
	require.Equal(t, "ssh:carol", afterStart[0].Principal)
	refused(one, "an unsigned approval", approval.ReasonUnsigned, approve(one, "alice", nil))
	refused(one, "an unknown key", approval.ReasonUnknownKey, approve(one, "mallory", sign("mallory", one, one.Digest)))
	refused(one, "a signature for another digest", approval.ReasonWrongGate, approve(one, "alice", sign("alice", one, strings.Repeat("0", 64))))
	require.Equal(t, afterStart, approvals(), "refusals change nothing")
	aliceOne := sign("alice", one, one.Digest)
	require.NoError(t, approve(one, "alice", aliceOne))

	two := awaitGate(ctx, t, env, id, "two")
	require.Equal(t, "2 more approvals, not by ssh:carol", two.StillNeeded)
	before := approvals()
	refused(two, "alice's approval replayed from the first gate", approval.ReasonWrongGate, approve(two, "alice", aliceOne))
	refused(two, "the starter's approval under four eyes", approval.ReasonFourEyes, approve(two, "carol", sign("carol", two, two.Digest)))
	require.Equal(t, before, approvals(), "refusals change nothing")
	require.NoError(t, approve(two, "alice", sign("alice", two, two.Digest)))
	two = gateNow(ctx, t, env, id)
	require.Equal(t, "two", two.Stage, "one approver of two does not open the gate")
	require.Equal(t, "1 more approval, not by ssh:alice or ssh:carol", two.StillNeeded)
	require.Equal(t, []string{"ssh:alice"}, two.ApprovedBy)
	refused(two, "alice's second approval", approval.ReasonAlreadyApproved, approve(two, "alice", sign("alice", two, two.Digest)))
	require.NoError(t, approve(two, "bob", sign("bob", two, two.Digest)))

	var res rollout.RolloutResult
	require.NoError(t, run.Get(ctx, &res))
	require.Len(t, res.Outcomes, 2)
	for _, o := range res.Outcomes {
		require.Equal(t, workflows.StateCompleted, o.State, o.Target)
	}
	got := approvals()
	require.Len(t, got, 4)
	var who []string
	for _, a := range got[1:] {
		require.Equal(t, activities.StoredApprovalGate(a).Stage+"@run:"+run.GetRunID(), a.Stage, "keyed by stage and run")
		who = append(who, activities.StoredApprovalGate(a).Stage+" "+a.Principal)
		require.Equal(t, "ssh", a.Method)
		require.Equal(t, ssh.FingerprintSHA256(keys[strings.TrimPrefix(a.Principal, "ssh:")].PublicKey()), a.KeyFingerprint)
		require.Contains(t, a.Signature, "BEGIN SSH SIGNATURE")
		require.NoError(t, approval.VerifyStored(nil, nil, activities.StoredRecord(a),
			activities.StoredApprovalGate(a)))
	}
	require.Equal(t, []string{"one ssh:alice", "two ssh:alice", "two ssh:bob"}, who)
	require.Equal(t, one.Digest, got[1].PlanDigest)

	replay.Record(t, env.Client, id, run.GetRunID(), "../testdata/histories/rollout-approval-signed.json")
}

// A worker with a keyring refuses an unsigned start of a plan whose gate
// needs four eyes: it could not tell who started it. Nothing runs.
func TestRolloutUnsignedStartOfAFourEyesPlanIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": approvaltest.Key(t)})})
	require.NoError(t, err)
	startRolloutWorkerWith(t, env, keyring)
	in := rollout.RolloutInput{Name: "unsigned-four-eyes", Stages: []rollout.Stage{
		{Name: "one", Kind: rollout.KindTest, Concurrency: 1, Approval: true, ApprovalPolicy: &approval.Policy{Approvers: 1, FourEyes: true},
			Updates: rollout.TestUpdates(rollout.TestInput{Name: "unsigned-four-eyes", Take: time.Second})},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: rollout.RolloutWorkflowID(in.Name), TaskQueue: env.TaskQueue}, rollout.Rollout, in)
	require.NoError(t, err)
	err = run.Get(ctx, nil)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	require.Equal(t, failure.ApprovalRefused, app.Type())
	require.Contains(t, err.Error(), "not signed")
	_, err = env.Client.DescribeWorkflowExecution(ctx, workflows.WorkflowID(rollout.KindTest, "test/unsigned-four-eyes"), "")
	require.Error(t, err, "no update started")
}

// awaitGate waits until the rollout shows stage's plan at its gate.
func awaitGate(ctx context.Context, t *testing.T, env *testenv.Env, id, stage string) *rollout.StagePlan {
	t.Helper()
	var sp *rollout.StagePlan
	require.Eventually(t, func() bool {
		sp = gateNow(ctx, t, env, id)
		return sp != nil && sp.Stage == stage
	}, 30*time.Second, 200*time.Millisecond, "the rollout never showed stage %s's plan", stage)
	return sp
}

func gateNow(ctx context.Context, t *testing.T, env *testenv.Env, id string) *rollout.StagePlan {
	var sp *rollout.StagePlan
	v, err := env.Client.QueryWorkflow(ctx, id, "", rollout.GatePlanQuery)
	if err != nil || v.Get(&sp) != nil {
		return nil
	}
	return sp
}

// A plan's later run reuses its rollout's workflow ID, and its gate may
// show the very plan of the earlier run: alice, who approved it then,
// approves it again, and the ledger keeps both approvals, each under its
// run.
func TestRolloutApprovalsAreKeptPerRun(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	alice := approvaltest.Key(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice})})
	require.NoError(t, err)
	startRolloutWorkerWith(t, env, keyring)
	in := rollout.RolloutInput{Name: "rerun", Stages: []rollout.Stage{
		{Name: "one", Kind: rollout.KindTest, Concurrency: 1, Approval: true, Updates: rollout.TestUpdates(rollout.TestInput{Name: "rerun", Take: time.Second})},
	}}
	id := rollout.RolloutWorkflowID(in.Name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var runs, digests []string
	for range 2 {
		run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, rollout.Rollout, in)
		require.NoError(t, err)
		gate := awaitGate(ctx, t, env, id, "one")
		s := approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, Run: gate.RunID, Stage: "one", PlanDigest: gate.Digest, Decision: approval.DecisionApprove},
			"reviewed", time.Now()), alice)
		h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
			Args:         []any{workflows.Approval{By: "alice", Reason: "reviewed", Stage: "one", PlanDigest: gate.Digest, Signed: &s}},
			WaitForStage: client.WorkflowUpdateStageCompleted})
		require.NoError(t, err)
		require.NoError(t, h.Get(ctx, nil), "alice approves the same plan in the plan's next run")
		require.NoError(t, run.Get(ctx, nil))
		runs, digests = append(runs, run.GetRunID()), append(digests, gate.Digest)
	}
	require.Equal(t, digests[0], digests[1], "both runs showed the same plan")
	got, err := env.Store.Approvals(ctx, id)
	require.NoError(t, err)
	require.Len(t, got, 2)
	for i, a := range got {
		require.Equal(t, "one@run:"+runs[i], a.Stage)
		require.Equal(t, "ssh:alice", a.Principal)
	}
}
