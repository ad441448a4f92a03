package activities_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
)

// A worker with no keyring refuses a start's plain-text ID token too, so
// that the run stops and its starter hears the token is exposed.
func TestKeyringlessWorkerRefusesARawStartToken(t *testing.T) {
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{})
	require.NoError(t, err)
	acts := &activities.ApprovalActivities{Keyring: keyring}
	var ts testsuite.WorkflowTestSuite
	ae := ts.NewTestActivityEnvironment()
	ae.RegisterActivity(acts)
	rollout, digest := "fleetsaga/rollout/plan/rawstart", strings.Repeat("ab", 32)
	st := approvaltest.Statement(t, approval.Gate{Rollout: rollout, PlanDigest: digest, Decision: approval.DecisionStart}, "start", time.Now())
	_, err = ae.ExecuteActivity(acts.VerifyStart, activities.VerifyStartInput{Rollout: rollout, RunID: "r1", PlanDigest: digest,
		Signed: approval.Signed{Payload: string(st.Payload()), IDToken: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ2In0.c2ln"}})
	require.ErrorContains(t, err, string(approval.ReasonUnsealedToken))
}
