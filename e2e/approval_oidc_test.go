package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
)

// An operator's OIDC ID token through a whole rollout, with the real
// binaries: the worker's keyring is its FLEETSAGA_APPROVAL_OIDC_* settings
// naming a real issuer the test starts. `starter approve --id-token-command`
// that logs in at that issuer and gets an expired token exits 1 with TokenExpired and changes nothing (the
// gate still shows stage one, the ledger holds no approval); with a live
// one the gate opens, the rollout completes and `starter status` shows
// the approval under dana's principal and the issuer#subject she
// presented, never the token.
func TestRolloutApprovedWithAnOIDCToken(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	iss := approvaltest.StartIssuer(t)
	s, err := spec.Generate(spec.GenerateOptions{Sleds: 2, Servers: 1, Seed: 7, SpeedUp: 30})
	require.NoError(t, err)
	stack := startStackWith(t, s, devstack.StackOptions{Temporal: devstack.TemporalDev, Workers: 1, WorkerEnv: []string{
		"FLEETSAGA_APPROVAL_OIDC_ISSUER=" + iss.URL, "FLEETSAGA_APPROVAL_OIDC_ALLOW_HTTP=true", "FLEETSAGA_APPROVAL_OIDC_AUDIENCE=fleetsaga", "FLEETSAGA_APPROVAL_OIDC_GROUPS=sp-admins"}})
	op := operator{t, stack}
	noAgent := []string{"SSH_AUTH_SOCK="}
	img := spImage(t, "1.1.0")
	plan := writePlan(t, "oidc", "- name: one\n  kind: sp-firmware\n  concurrency: 1\n  approval: true\n  updates:\n"+
		spPlanUpdate(t, img, 1, s.Racks[0].Sleds[1].Serial))
	id := "fleetsaga/rollout/plan/oidc"
	r := op.runWith(noAgent, "rollout", plan)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 0, op.run("watch", id, "--until-gate").code)

	// dana logs in at the issuer: starter --id-token-command asks it for
	// a token bound to the statement.
	issueFor := func(exp time.Time) {
		iss.IssueAs(map[string]any{"iss": iss.URL, "aud": "fleetsaga", "sub": "u-123", "email": "dana@example.com",
			"email_verified": true, "groups": []string{"sp-admins"}, "iat": time.Now().Add(-time.Hour).Unix(), "exp": exp.Unix()})
	}
	type status struct {
		Status   string `json:"status"`
		GatePlan *struct {
			Stage string `json:"stage"`
		} `json:"gatePlan"`
		Approvals []struct {
			Principal      string `json:"principal"`
			Method         string `json:"method"`
			KeyFingerprint string `json:"keyFingerprint"`
			Signature      string `json:"signature"`
			Payload        string `json:"payload"`
		} `json:"approvals"`
	}

	var gate struct {
		GatePlan struct {
			Digest string `json:"digest"`
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
	require.Empty(t, st.Approvals, "the expired token is not in the ledger")

	issueFor(time.Now().Add(5 * time.Minute))
	r = op.runWith(noAgent, approve...)
	require.Equal(t, 0, r.code, r.stderr)
	w := op.run("watch", id)
	require.Equal(t, 0, w.code, "the rollout completes: %s", w.stderr)

	st = status{}
	op.json(&st, "status", id)
	require.Equal(t, "Completed", st.Status)
	require.Len(t, st.Approvals, 1)
	a := st.Approvals[0]
	require.Equal(t, "oidc:"+iss.URL+"#u-123", a.Principal, "the issuer's subject, never the email claim")
	require.Equal(t, "oidc", a.Method)
	require.Equal(t, iss.URL+"#u-123", a.KeyFingerprint)
	require.NotContains(t, a.Signature+a.Payload, "eyJ", "the ledger keeps no bearer token (a JWT's header starts eyJ)")
	var stmt map[string]any
	require.NoError(t, json.Unmarshal([]byte(a.Payload), &stmt), "the signed statement is kept")
}
