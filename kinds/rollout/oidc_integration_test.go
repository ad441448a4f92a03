package rollout_test

import (
	"context"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/internal/config"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// An OIDC ID token through a whole rollout on a real Temporal server and
// ledger: the worker's keyring comes from its --approval-oidc-* flags
// naming a real issuer the test starts. An expired token from that issuer
// is refused (TokenExpired) and changes nothing: the gate still shows its
// plan and the ledger holds no approval. Dana's live token, in the allowed
// group, opens the gate, the rollout completes, and the ledger holds her
// principal and the issuer#subject she signed as, with a statement that
// re-checks offline and not the bearer token itself. Each token travels
// sealed to the worker's key; one in plain text is refused.
func TestRolloutOIDCApprovalOnRealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	iss := approvaltest.StartIssuer(t)
	ts := approvaltest.NewTokenSealer(t)
	var flags config.Approvals
	fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
	flags.Bind(fs)
	require.NoError(t, fs.Parse([]string{"--approval-oidc-issuer", iss.URL, "--approval-oidc-audience", "fleetsaga",
		"--approval-oidc-groups", "sp-admins", "--approval-oidc-allow-http", "--approval-token-key", ts.Key}))
	require.NoError(t, flags.Validate())
	keyring, err := approval.LoadKeyring(flags.Config())
	require.NoError(t, err)
	startRolloutWorkerWith(t, env, keyring)

	in := rollout.RolloutInput{Name: "oidc", Stages: []rollout.Stage{
		{Name: "one", Kind: rollout.KindTest, Concurrency: 1, Approval: true, Updates: rollout.TestUpdates(rollout.TestInput{Name: "oidc", Take: time.Second})},
	}}
	id := rollout.RolloutWorkflowID(in.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, rollout.Rollout, in)
	require.NoError(t, err)
	gate := awaitGate(ctx, t, env, id, "one")

	// Each token is issued for its statement (its nonce the statement's
	// digest), as starter --id-token-command asks the issuer for.
	token := func(st approval.Statement, exp time.Time) string {
		return iss.Token(t, map[string]any{"iss": iss.URL, "aud": "fleetsaga", "sub": "u-123", "email": "dana@example.com",
			"groups": []string{"sp-admins"}, "iat": time.Now().Add(-time.Hour).Unix(), "exp": exp.Unix(), "nonce": approval.StatementDigest(st)})
	}
	var live string
	approveWith := func(exp time.Time, seal func(approval.Statement, string) approval.Signed) (string, error) {
		st := approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, Run: gate.RunID, Stage: gate.Stage, PlanDigest: gate.Digest, Decision: approval.DecisionApprove},
			"dashboards green", time.Now())
		tok := token(st, exp)
		signed := seal(st, tok)
		h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
			Args:         []any{workflows.Approval{By: "dana", Reason: "dashboards green", Stage: gate.Stage, PlanDigest: gate.Digest, Signed: &signed}},
			WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			return tok, err
		}
		return tok, h.Get(ctx, nil)
	}
	approve := func(exp time.Time) (string, error) {
		return approveWith(exp, func(st approval.Statement, tok string) approval.Signed { return ts.Seal(t, st, tok) })
	}

	// A starter from before sealing sends the token in plain text: the
	// update's validator refuses it, so it never reaches the history.
	_, err = approveWith(time.Now().Add(5*time.Minute), func(st approval.Statement, tok string) approval.Signed {
		return approval.Signed{Payload: string(st.Payload()), IDToken: tok}
	})
	requireApprovalRefused(t, err, approval.ReasonUnsealedToken)

	expired, err := approve(time.Now().Add(-time.Minute))
	requireApprovalRefused(t, err, approval.ReasonTokenExpired)
	require.NotContains(t, err.Error(), expired, "no token in the refusal")
	now := gateNow(ctx, t, env, id)
	require.NotNil(t, now, "the expired token changed the gate")
	require.Equal(t, "one", now.Stage)
	got, err := env.Store.Approvals(ctx, id)
	require.NoError(t, err)
	require.Empty(t, got, "the expired token is not in the ledger")

	live, err = approve(time.Now().Add(5 * time.Minute))
	require.NoError(t, err)
	var res rollout.RolloutResult
	require.NoError(t, run.Get(ctx, &res))
	require.Len(t, res.Outcomes, 1)
	require.Equal(t, workflows.StateCompleted, res.Outcomes[0].State)

	got, err = env.Store.Approvals(ctx, id)
	require.NoError(t, err)
	require.Len(t, got, 1)
	a := got[0]
	require.Equal(t, "oidc:"+iss.URL+"#u-123", a.Principal, "the issuer's subject, never the email claim")
	require.Equal(t, string(approval.MethodOIDC), a.Method)
	require.Equal(t, iss.URL+"#u-123", a.KeyFingerprint)
	require.Equal(t, gate.Digest, a.PlanDigest)
	require.Equal(t, "one@run:"+run.GetRunID(), a.Stage)
	require.NotContains(t, a.Signature+a.Payload, live, "a bearer token is not kept")
	require.NoError(t, approval.VerifyStored(nil, nil, activities.StoredRecord(a),
		activities.StoredApprovalGate(a)), "the stored statement re-checks offline")
}

// requireApprovalRefused: err is the workflow's refusal of an approval,
// for reason want.
func requireApprovalRefused(t *testing.T, err error, want approval.Reason) {
	t.Helper()
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, failure.ApprovalRefused, app.Type())
	var reason string
	require.NoError(t, app.Details(&reason))
	require.Equal(t, string(want), reason, "%v", err)
}
