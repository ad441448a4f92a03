package activities_test

// Red team 2, on the real ledger: a database user's rows against
// VerifyStart and VerifyApproval. Each test asserts the protection; a
// failing one is an attack that works.

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
)

// An old starter sends victim's start with the ID token in plain text:
// RefuseRawStart marks the statement exposed, so a copy sealed by anyone
// who read the history is refused (held). exposed_statement is neither
// append-only nor chained: the database's owner deletes the mark, and
// the resealed copy starts the plan as victim (an operator, within the
// token's life and the max age), unseen by audit verify. GAPS does not
// list exposed_statement among the tables whose edits are not seen.
func TestADeletedExposedMarkLetsAResealedRawStartTokenCount(t *testing.T) {
	env := testenv.New(t)
	iss := approvaltest.StartIssuer(t)
	ts := approvaltest.NewTokenSealer(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{OIDCIssuer: iss.URL, OIDCAudience: "fleetsaga", AllowHTTPIssuer: true, TokenKeys: []string{ts.Key}})
	require.NoError(t, err)
	acts := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring}
	var suite testsuite.WorkflowTestSuite
	ae := suite.NewTestActivityEnvironment()
	ae.RegisterActivity(acts)

	rollout, digest := "fleetsaga/rollout/plan/rt2-"+strings.ReplaceAll(t.Name(), "/", "-"), strings.Repeat("a9", 32)
	st := approvaltest.Statement(t, approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: rollout, PlanDigest: digest, Decision: approval.DecisionStart}, "start", time.Now())
	tok := iss.Token(t, map[string]any{"iss": iss.URL, "aud": "fleetsaga", "sub": "victim", "iat": time.Now().Add(-time.Minute).Unix(),
		"exp": time.Now().Add(30 * time.Minute).Unix(), "nonce": approval.StatementDigest(st)})

	_, err = ae.ExecuteActivity(acts.RefuseRawStart, activities.RawStartInput{Rollout: rollout, RunID: "run-1", PlanDigest: digest, Payload: string(st.Payload())})
	require.ErrorContains(t, err, string(approval.ReasonUnsealedToken))

	resealed := ts.Seal(t, st, tok) // the history reader, with the public key
	startRun2 := func() error {
		_, err := ae.ExecuteActivity(acts.VerifyStart, activities.VerifyStartInput{Rollout: rollout, RunID: "run-2", PlanDigest: digest, Signed: resealed})
		return err
	}
	require.ErrorContains(t, startRun2(), string(approval.ReasonReplayed), "held: the mark refuses the resealed copy")

	_, err = env.Store.DB().Exec(`DELETE FROM exposed_statement WHERE rollout_id = $1`, rollout) // the owner; no trigger to drop
	if err == nil {
		err = startRun2()
	}
	require.Error(t, err, "the owner deleted the exposed mark (no trigger, no chain) and the resealed raw token started the plan as victim")
}
