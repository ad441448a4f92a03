package rollout_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/internal/config"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func sealedTokenWorker(t *testing.T, env *testenv.Env) (*approvaltest.Issuer, *approvaltest.TokenSealer) {
	iss := approvaltest.StartIssuer(t)
	ts := approvaltest.NewTokenSealer(t)
	var flags config.Approvals
	fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
	flags.Bind(fs)
	require.NoError(t, fs.Parse([]string{"--approval-oidc-issuer", iss.URL, "--approval-oidc-audience", "fleetsaga",
		"--approval-oidc-allow-http", "--approval-token-key", ts.Key}))
	require.NoError(t, flags.Validate())
	keyring, err := approval.LoadKeyring(flags.Config())
	require.NoError(t, err)
	startRolloutWorkerWith(t, env, keyring)
	return iss, ts
}

func historyHolds(ctx context.Context, t *testing.T, env *testenv.Env, id, runID, s string) bool {
	return len(eventsHolding(ctx, t, env, id, runID, s)) > 0
}

// eventsHolding are the types of the events whose payloads hold s.
func eventsHolding(ctx context.Context, t *testing.T, env *testenv.Env, id, runID, s string) []string {
	var types []string
	it := env.Client.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		b, _ := proto.Marshal(ev) // payloads are raw bytes in the wire form (JSON would base64 them)
		if strings.Contains(string(b), s) {
			types = append(types, ev.GetEventType().String())
		}
	}
	return types
}

// On a real server: an approve update whose bytes hold a raw token under
// a repeated key (the last one empty) is refused before the history.
func TestRawTokenUnderARepeatedKeyNeverReachesTheHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	iss, _ := sealedTokenWorker(t, env)
	in := rollout.RolloutInput{Name: "raw-approve", Stages: []rollout.Stage{
		{Name: "one", Kind: rollout.KindTest, Concurrency: 1, Approval: true, Updates: rollout.TestUpdates(rollout.TestInput{Name: "raw-approve", Take: time.Second})},
	}}
	id := rollout.RolloutWorkflowID(in.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, rollout.Rollout, in)
	require.NoError(t, err)
	gate := awaitGate(ctx, t, env, id, "one")
	st := approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, Run: gate.RunID, Stage: gate.Stage, PlanDigest: gate.Digest, Decision: approval.DecisionApprove}, "ok", time.Now())
	tok := iss.Token(t, map[string]any{"iss": iss.URL, "aud": "fleetsaga", "sub": "dana", "iat": time.Now().Unix(),
		"exp": time.Now().Add(10 * time.Minute).Unix(), "nonce": approval.StatementDigest(st)})
	payload, _ := json.Marshal(string(st.Payload()))
	body := `{"by":"dana","reason":"ok","stage":"one","planDigest":"` + gate.Digest + `","signed":{"payload":` + string(payload) +
		`,"idToken":"` + tok + `","idToken":""}}`
	h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
		Args: []any{json.RawMessage(body)}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	require.ErrorContains(t, err, string(approval.ReasonUnsealedToken))
	require.False(t, historyHolds(ctx, t, env, id, run.GetRunID(), tok), "the raw ID token is in the history")
}

// On a real server: a start with a raw token is refused (UnsealedToken)
// without copying the token past its start event; a history reader who
// seals that token with the workers' public key and starts the plan
// again is refused (Replayed), and the ledger holds no start. With
// FLEETSAGA_RECORD_HISTORIES=1 the refused run's history is saved.
func TestRawStartTokenSealedByAHistoryReaderStartsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	env := testenv.New(t)
	iss, ts := sealedTokenWorker(t, env)
	in := rollout.RolloutInput{Name: "raw-start", Stages: []rollout.Stage{
		{Name: "one", Kind: rollout.KindTest, Concurrency: 1, Approval: true, Updates: rollout.TestUpdates(rollout.TestInput{Name: "raw-start", Take: time.Second})},
	}}
	id := rollout.RolloutWorkflowID(in.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	digest, err := in.StartDigest()
	require.NoError(t, err)
	st := approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, PlanDigest: digest, Decision: approval.DecisionStart}, "start plan raw-start", time.Now())
	tok := iss.Token(t, map[string]any{"iss": iss.URL, "aud": "fleetsaga", "sub": "victim", "iat": time.Now().Unix(),
		"exp": time.Now().Add(10 * time.Minute).Unix(), "nonce": approval.StatementDigest(st)})
	victim := in
	victim.StartSignature = &approval.Signed{Payload: string(st.Payload()), IDToken: tok}
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, rollout.Rollout, victim)
	require.NoError(t, err)
	err = run.Get(ctx, nil)
	require.ErrorContains(t, err, string(approval.ReasonUnsealedToken))
	require.Equal(t, []string{"WorkflowExecutionStarted"}, eventsHolding(ctx, t, env, id, run.GetRunID(), tok))
	// Recorded with RefuseRawStart's options as they were (bounded by
	// verifyRetryBound): it replays with its unbounded ones, no marker.
	replay.Record(t, env.Client, id, run.GetRunID(), "../testdata/histories/rollout-raw-start-refused.json")

	// The reader: history and public key only.
	pub, err := approval.LoadTokenPublicKey(ts.Public)
	require.NoError(t, err)
	resealed, err := approval.SealIDToken(st, tok, pub)
	require.NoError(t, err)
	attacker := in
	attacker.StartSignature = &resealed
	run2, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, rollout.Rollout, attacker)
	require.NoError(t, err)
	require.ErrorContains(t, run2.Get(ctx, nil), string(approval.ReasonReplayed))
	rows, err := env.Store.Approvals(ctx, id)
	require.NoError(t, err)
	require.Len(t, rows, 1, "no start counted: the ledger holds the exposed mark alone")
	require.Equal(t, ledger.MethodExposed, rows[0].Method)
}
