package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
)

// An operator's OIDC ID token through a whole rollout, with the real
// binaries: the worker's keyring is its FLEETSAGA_APPROVAL_OIDC_* settings
// naming a real issuer the test starts. `starter approve --id-token` with
// an expired token exits 1 with TokenExpired and changes nothing (the
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
		"FLEETSAGA_APPROVAL_OIDC_ISSUER=" + iss.URL, "FLEETSAGA_APPROVAL_OIDC_AUDIENCE=fleetsaga", "FLEETSAGA_APPROVAL_OIDC_GROUPS=sp-admins"}})
	op := operator{t, stack}
	noAgent := []string{"SSH_AUTH_SOCK="}
	img := spImage(t, "1.1.0")
	plan := writePlan(t, "oidc", "- name: one\n  kind: sp-firmware\n  concurrency: 1\n  approval: true\n  updates:\n"+
		spPlanUpdate(t, img, 1, s.Racks[0].Sleds[1].Serial))
	id := "fleetsaga/rollout/plan/oidc"
	r := op.runWith(noAgent, "rollout", plan)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 0, op.run("watch", id, "--until-gate").code)

	tokenFile := func(name string, exp time.Time) (string, string) {
		tok := iss.Token(t, map[string]any{"iss": iss.URL, "aud": "fleetsaga", "sub": "u-123", "email": "dana@example.com",
			"groups": []string{"sp-admins"}, "iat": time.Now().Add(-time.Hour).Unix(), "exp": exp.Unix()})
		path := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(path, []byte(tok), 0o600))
		return path, tok
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

	expired, expiredTok := tokenFile("expired", time.Now().Add(-time.Minute))
	r = op.runWith(noAgent, "approve", id, "--by", "dana", "--reason", "dashboards green", "--id-token", expired)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "TokenExpired")
	require.NotContains(t, r.stdout+r.stderr, expiredTok, "no token in the refusal")
	var st status
	op.json(&st, "status", id)
	require.Equal(t, "Running", st.Status)
	require.NotNil(t, st.GatePlan, "the expired token opened the gate")
	require.Equal(t, "one", st.GatePlan.Stage)
	require.Empty(t, st.Approvals, "the expired token is not in the ledger")

	live, liveTok := tokenFile("live", time.Now().Add(5*time.Minute))
	r = op.runWith(noAgent, "approve", id, "--by", "dana", "--reason", "dashboards green", "--id-token", live)
	require.Equal(t, 0, r.code, r.stderr)
	w := op.run("watch", id)
	require.Equal(t, 0, w.code, "the rollout completes: %s", w.stderr)

	st = status{}
	op.json(&st, "status", id)
	require.Equal(t, "Completed", st.Status)
	require.Len(t, st.Approvals, 1)
	a := st.Approvals[0]
	require.Equal(t, "dana@example.com", a.Principal)
	require.Equal(t, "oidc", a.Method)
	require.Equal(t, iss.URL+"#u-123", a.KeyFingerprint)
	require.NotContains(t, a.Signature+a.Payload, liveTok, "the ledger keeps no bearer token")
	var stmt map[string]any
	require.NoError(t, json.Unmarshal([]byte(a.Payload), &stmt), "the signed statement is kept")
}
