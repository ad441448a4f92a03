package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"

	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
)

// Who may act at all (DEPLOYING.md, "Who may act"): the real Temporal
// server on PostgreSQL with its authorization on, JWTs from an identity
// provider the test starts (its JWKS), the workers presenting a write
// token from a file. The starter presents each role's token with
// --temporal-api-key-file and exits 8 (unauthorised) where the server
// refuses.

// The stock server and its stock configuration (authorizer and
// claimMapper "default"): no token and a viewer's (default:read) cannot
// start a rollout (exit 8, nothing started) nor approve, pause, cancel or
// terminate it, but may list and watch; an operator's (default:write) may
// start, pause, resume, approve and terminate. An approve-only token is
// refused everything here: the stock roles cannot let anyone approve
// without letting them terminate (TestTemporalApproverMayOnlyApprove).
func TestTemporalStockAuthorizationLimitsWhoMayAct(t *testing.T) {
	a := startAuthStack(t, devstack.AuthorizerDefault)
	id := a.startRollout(a.operator)
	for who, token := range map[string]string{"no token": "", "viewer": a.viewer, "approver": a.approver} {
		r := a.as(token, "rollout", a.plan("again", 3, 0))
		require.Equal(t, 8, r.code, "%s starts a rollout: %s", who, r.stderr)
		require.Equal(t, 2, a.as(a.operator, "status", "fleetsaga/rollout/plan/again").code, "%s's rollout never started", who)
		a.refused(token, who, id, "pause", "cancel", "approve")
		a.terminate(token, who, id, codes.PermissionDenied)
	}
	a.mayRead(a.viewer, id)
	require.Equal(t, 0, a.as(a.operator, "pause", id).code)
	require.Equal(t, 0, a.as(a.operator, "resume", id).code)
	a.approve(a.operator, id)
	a.terminate(a.operator, "operator", id, codes.OK)
}

// Fleetsaga's server build (authorizer "fleetsaga"): an approver's token
// (default:approve) may watch a rollout to its gate and approve it, and
// the gate opens; it may not start, pause, cancel or terminate. The
// operator's and viewer's tokens are as on the stock server.
func TestTemporalApproverMayOnlyApprove(t *testing.T) {
	a := startAuthStack(t, devstack.AuthorizerFleetsaga)
	id := a.startRollout(a.operator)
	r := a.as(a.approver, "rollout", a.plan("again", 3, 0))
	require.Equal(t, 8, r.code, "the approver starts a rollout: %s", r.stderr)
	a.refused(a.approver, "approver", id, "pause", "cancel")
	a.terminate(a.approver, "approver", id, codes.PermissionDenied)
	a.refused(a.viewer, "viewer", id, "approve")
	a.mayRead(a.approver, id)
	a.approve(a.approver, id)
	a.terminate(a.viewer, "viewer", id, codes.PermissionDenied)
	a.terminate(a.operator, "operator", id, codes.OK)
}

// authStack is a stack with authorization on and a token per role.
type authStack struct {
	t                          *testing.T
	op                         operator
	spec                       *spec.Spec
	img                        string
	dir                        string
	operator, viewer, approver string
}

func startAuthStack(t *testing.T, authorizer string) *authStack {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	iss := approvaltest.StartIssuer(t)
	token := func(sub string, perms ...string) string {
		return iss.Token(t, map[string]any{"sub": sub, "permissions": perms, "exp": time.Now().Add(time.Hour).Unix()})
	}
	s, err := spec.Generate(spec.GenerateOptions{Sleds: 4, Servers: 1, Seed: 6, SpeedUp: 30})
	require.NoError(t, err)
	a := &authStack{t: t, spec: s, dir: t.TempDir(), operator: token("olivia", "default:write"),
		viewer: token("victor", "default:read"), approver: token("alice", "default:approve")}
	a.op = operator{t, startStackWith(t, s, devstack.StackOptions{Temporal: devstack.TemporalCluster, Workers: 1,
		TemporalAuth: &devstack.TemporalAuth{JWKSURL: iss.JWKSURL(), Authorizer: authorizer,
			AdminToken: token("devstack", "temporal-system:admin"), WorkerToken: token("worker", "default:write")}})}
	a.img = spImage(t, "1.1.0")
	return a
}

// as runs starter presenting token ("" presents none).
func (a *authStack) as(token string, args ...string) cliResult {
	a.t.Helper()
	env := []string{"TEMPORAL_TLS=false", "SSH_AUTH_SOCK="}
	if token != "" {
		file := filepath.Join(a.dir, uuid.NewString())
		require.NoError(a.t, os.WriteFile(file, []byte(token), 0o600))
		env = append(env, "FLEETSAGA_TEMPORAL_API_KEY_FILE="+file)
	}
	r := a.op.runWith(env, args...)
	if token != "" {
		require.NotContains(a.t, r.stdout+r.stderr, token, "no token in starter's output")
	}
	return r
}

// plan is a two-stage plan of SP updates of the given sleds, each stage
// behind a gate.
func (a *authStack) plan(name string, first, second int) string {
	update := func(slot int) string { return spPlanUpdate(a.t, a.img, slot, a.spec.Racks[0].Sleds[slot].Serial) }
	return writePlan(a.t, name, "- name: one\n  kind: sp-firmware\n  concurrency: 1\n  approval: true\n  updates:\n"+update(first)+
		"- name: two\n  kind: sp-firmware\n  concurrency: 1\n  approval: true\n  updates:\n"+update(second))
}

func (a *authStack) startRollout(token string) string {
	a.t.Helper()
	r := a.as(token, "rollout", a.plan("gated", 1, 2))
	require.Equal(a.t, 0, r.code, r.stderr)
	id := "fleetsaga/rollout/plan/gated"
	w := a.as(token, "watch", id, "--until-gate")
	require.Equal(a.t, 0, w.code, w.stderr)
	return id
}

// refused: each command by token's holder exits 8 and says why.
func (a *authStack) refused(token, who, id string, cmds ...string) {
	a.t.Helper()
	for _, cmd := range cmds {
		args := []string{cmd, id}
		if cmd == "approve" {
			args = append(args, "--by", who, "--reason", "looks fine", "--plan-digest", strings.Repeat("0", 64))
		}
		r := a.as(token, args...)
		require.Equal(a.t, 8, r.code, "%s may not %s: %s", who, cmd, r.stderr)
		require.Contains(a.t, r.stderr, "refused access to namespace default", "%s %s", who, cmd)
	}
	var st struct {
		Status   string `json:"status"`
		GatePlan *struct {
			Stage string `json:"stage"`
		} `json:"gatePlan"`
	}
	r := a.as(a.operator, "status", id, "--json")
	require.Equal(a.t, 0, r.code, r.stderr)
	require.NoError(a.t, json.Unmarshal([]byte(r.stdout), &st), r.stdout)
	require.Equal(a.t, "Running", st.Status, "refusals changed nothing")
	require.NotNil(a.t, st.GatePlan, "still at its gate")
}

// mayRead: token's holder may list rollouts and watch one to its gate.
func (a *authStack) mayRead(token, id string) {
	a.t.Helper()
	r := a.as(token, "list", "--kind", "rollout")
	require.Equal(a.t, 0, r.code, r.stderr)
	require.Contains(a.t, r.stdout, id)
	w := a.as(token, "watch", id, "--until-gate")
	require.Equal(a.t, 0, w.code, w.stderr)
}

// approve: token's holder approves the first gate and it opens (the
// rollout moves on to its second).
func (a *authStack) approve(token, id string) {
	a.t.Helper()
	var gate struct {
		GatePlan struct {
			Digest string `json:"digest"`
		} `json:"gatePlan"`
	}
	r := a.as(token, "status", id, "--json")
	require.Equal(a.t, 0, r.code, r.stderr)
	require.NoError(a.t, json.Unmarshal([]byte(r.stdout), &gate), r.stdout)
	r = a.as(token, "approve", id, "--by", "alice", "--reason", "stage one reviewed", "--plan-digest", gate.GatePlan.Digest)
	require.Equal(a.t, 0, r.code, r.stderr)
	require.Eventually(a.t, func() bool {
		var st struct {
			GatePlan *struct {
				Stage string `json:"stage"`
			} `json:"gatePlan"`
		}
		r := a.as(token, "status", id, "--json")
		return r.code == 0 && json.Unmarshal([]byte(r.stdout), &st) == nil && st.GatePlan != nil && st.GatePlan.Stage == "two"
	}, 2*time.Minute, time.Second, "the approved gate opened and the rollout reached its second")
}

// terminate: the Temporal SDK (as `temporal workflow terminate` calls it)
// with token's holder's credentials; want is the status the server answers.
func (a *authStack) terminate(token, who, id string, want codes.Code) {
	a.t.Helper()
	opts := client.Options{HostPort: a.op.stack.Temporal.FrontendHostPort(), ConnectionOptions: client.ConnectionOptions{TLSDisabled: true}}
	if token != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(token)
	}
	c, err := client.Dial(opts)
	require.NoError(a.t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = c.TerminateWorkflow(ctx, id, "", who+" terminates")
	require.Equal(a.t, want, serviceerror.ToStatus(err).Code(), "%s terminates: %v", who, err)
	if want == codes.OK {
		d, err := c.DescribeWorkflowExecution(ctx, id, "")
		require.NoError(a.t, err)
		require.Equal(a.t, "Terminated", d.GetWorkflowExecutionInfo().GetStatus().String())
	}
}
