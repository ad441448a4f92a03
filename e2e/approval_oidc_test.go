package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// An operator's OIDC ID token through a whole rollout, with the real
// binaries: the worker's keyring is its FLEETSAGA_APPROVAL_OIDC_* settings
// naming a real issuer the test starts, and its token-sealing key. dana
// starts the rollout with a token (`starter rollout --id-token-command`).
// `starter approve --id-token-command` that logs in at that issuer and
// gets an expired token exits 1 with TokenExpired and changes nothing (the
// gate still shows stage one, the ledger holds no approval); with a live
// one the gate opens, the rollout completes and `starter status` shows
// the approval under dana's principal and the issuer#subject she
// presented, never the token.
//
// The red team's export: whoever reads the history (`temporal workflow
// show`) finds no part of any token the issuer issued, only tokens sealed
// to the worker's key; a sealed token they read there, moved onto an
// approval of their own at the gate, is refused and opens nothing.
func TestRolloutApprovedWithAnOIDCToken(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	iss := approvaltest.StartIssuer(t)
	tokenKey, tokenPub := approvaltest.TokenKeyFiles(t, t.TempDir())
	s, err := spec.Generate(spec.GenerateOptions{Sleds: 2, Servers: 1, Seed: 7, SpeedUp: 30})
	require.NoError(t, err)
	stack := startStackWith(t, s, devstack.StackOptions{Temporal: devstack.TemporalDev, Workers: 1, WorkerEnv: []string{
		"FLEETSAGA_APPROVAL_OIDC_ISSUER=" + iss.URL, "FLEETSAGA_APPROVAL_OIDC_ALLOW_HTTP=true", "FLEETSAGA_APPROVAL_OIDC_AUDIENCE=fleetsaga", "FLEETSAGA_APPROVAL_OIDC_GROUPS=sp-admins",
		"FLEETSAGA_APPROVAL_TOKEN_KEY=" + tokenKey}})
	op := operator{t, stack}
	noAgent := []string{"SSH_AUTH_SOCK=", "FLEETSAGA_APPROVAL_TOKEN_PUBLIC_KEY=" + tokenPub}
	img := spImage(t, "1.1.0")
	plan := writePlan(t, "oidc", "- name: one\n  kind: sp-firmware\n  concurrency: 1\n  approval: true\n  updates:\n"+
		spPlanUpdate(t, img, 1, s.Racks[0].Sleds[1].Serial))
	id := "fleetsaga/rollout/plan/oidc"
	// dana logs in at the issuer: starter --id-token-command asks it for
	// a token bound to the statement.
	issueFor := func(exp time.Time) {
		iss.IssueAs(map[string]any{"iss": iss.URL, "aud": "fleetsaga", "sub": "u-123", "email": "dana@example.com",
			"email_verified": true, "groups": []string{"sp-admins"}, "iat": time.Now().Add(-time.Hour).Unix(), "exp": exp.Unix()})
	}
	issueFor(time.Now().Add(5 * time.Minute))
	r := op.runWith(noAgent, "rollout", plan, "--id-token-command", iss.TokenCommand())
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 0, op.run("watch", id, "--until-gate").code)
	requireNoToken(t, exportHistory(t, stack, id), iss.Issued())
	type approvalRow struct {
		Stage          string `json:"stage"`
		Principal      string `json:"principal"`
		Method         string `json:"method"`
		KeyFingerprint string `json:"keyFingerprint"`
		Signature      string `json:"signature"`
		Payload        string `json:"payload"`
	}
	type status struct {
		Status   string `json:"status"`
		GatePlan *struct {
			Stage string `json:"stage"`
		} `json:"gatePlan"`
		Approvals []approvalRow `json:"approvals"`
	}
	// atGate: the ledger's approvals of the gate (the start is one too).
	atGate := func(st status) []approvalRow {
		var out []approvalRow
		for _, a := range st.Approvals {
			if !strings.HasPrefix(a.Stage, "start:") {
				out = append(out, a)
			}
		}
		return out
	}

	var gate struct {
		GatePlan struct {
			Digest string `json:"digest"`
			RunID  string `json:"runId"`
		} `json:"gatePlan"`
	}
	op.json(&gate, "status", id)
	approve := []string{"approve", id, "--by", "dana", "--reason", "dashboards green", "--plan-digest", gate.GatePlan.Digest,
		"--id-token-command", iss.TokenCommand()}
	issueFor(time.Now().Add(-time.Minute))
	r = op.runWith(noAgent, approve...)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "TokenExpired")
	require.NotContains(t, r.stdout+r.stderr, "eyJ", "no token in the refusal")
	var st status
	op.json(&st, "status", id)
	require.Equal(t, "Running", st.Status)
	require.NotNil(t, st.GatePlan, "the expired token opened the gate")
	require.Equal(t, "one", st.GatePlan.Stage)
	require.Empty(t, atGate(st), "the expired token is not in the ledger")

	// The attacker moves a sealed token read from the history (the start's
	// or the expired approval's) onto an approval of the gate of their own.
	sealed := sealedTokens(exportHistory(t, stack, id))
	require.Len(t, sealed, 2, "the start and the expired approval carry their tokens sealed")
	moved := requireMovedTokenRefused(t, stack, id, gate.GatePlan.RunID, gate.GatePlan.Digest, sealed[0])
	require.NotContains(t, moved, sealed[0], "the refusal does not echo the sealed token")
	st = status{}
	op.json(&st, "status", id)
	require.NotNil(t, st.GatePlan, "the moved token opened the gate")
	require.Empty(t, atGate(st), "the moved token is not in the ledger")

	issueFor(time.Now().Add(5 * time.Minute))
	r = op.runWith(noAgent, approve...)
	require.Equal(t, 0, r.code, r.stderr)
	w := op.run("watch", id)
	require.Equal(t, 0, w.code, "the rollout completes: %s", w.stderr)

	st = status{}
	op.json(&st, "status", id)
	require.Equal(t, "Completed", st.Status)
	require.Len(t, st.Approvals, 2, "the start's and the gate's")
	require.Len(t, atGate(st), 1)
	a := atGate(st)[0]
	require.Equal(t, "oidc:"+iss.URL+"#u-123", a.Principal, "the issuer's subject, never the email claim")
	require.Equal(t, "oidc", a.Method)
	require.Equal(t, iss.URL+"#u-123", a.KeyFingerprint)
	require.NotContains(t, a.Signature+a.Payload, "eyJ", "the ledger keeps no bearer token (a JWT's header starts eyJ)")
	var stmt map[string]any
	require.NoError(t, json.Unmarshal([]byte(a.Payload), &stmt), "the signed statement is kept")

	export := exportHistory(t, stack, id)
	require.Len(t, iss.Issued(), 3, "the start's, the expired and the live approval's token")
	requireNoToken(t, export, iss.Issued())
	require.Len(t, sealedTokens(export), 3, "the gate opened with a sealed token")
}

// requireMovedTokenRefused sends, as the attacker with the approve role
// would, an approval of the gate whose statement is new and whose sealed
// token was sealed for another statement: the worker refuses it
// (BadToken). It returns the refusal's text.
func requireMovedTokenRefused(t *testing.T, stack *devstack.Stack, id, run, digest, sealed string) string {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: stack.Temporal.FrontendHostPort()})
	require.NoError(t, err)
	defer c.Close()
	st, err := approval.NewStatement(id, "one", digest, approval.DecisionApprove, "dashboards green", time.Now())
	require.NoError(t, err)
	st.Run = run
	ap := map[string]any{"by": "dana", "reason": "dashboards green", "stage": "one", "planDigest": digest,
		"signed": map[string]any{"payload": string(st.Payload()), "sealedIdToken": sealed}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate, Args: []any{ap},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app, "the moved token is refused")
	require.Equal(t, failure.ApprovalRefused, app.Type())
	var reason string
	require.NoError(t, app.Details(&reason))
	require.Equal(t, string(approval.ReasonBadToken), reason, "%v", err)
	return err.Error()
}
