package activities_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// Carol signed a start of plan q3 for staging a year ago. In
// production (its own ledger) a database user with the worker's role
// INSERTs one rollout_approval row under stage "start:<run>" holding that
// statement's bytes and nonce (what the worker itself would write). The
// operator starts (or resets) the rollout with carol's old signed start:
// VerifyStart finds "its" row, takes the retry path, and checks neither
// the namespace nor the age. The row is the only thing that made it count.
func TestStagingStartDoesNotCountInProductionOnceAnInsertedRowNamesIt(t *testing.T) {
	env := testenv.New(t)
	carol, acts, ae := oneSignerActs(t, env, "carol")
	rollout, digest := "fleetsaga/rollout/plan/q3-"+strings.ReplaceAll(t.Name(), "/", "-"), strings.Repeat("c5", 32)
	st := approvaltest.Statement(t, approval.Gate{TemporalNamespace: "staging", Rollout: rollout, PlanDigest: digest, Decision: approval.DecisionStart},
		"start plan q3", time.Now().Add(-365*24*time.Hour))
	signed := approvaltest.Sign(t, st, carol)
	start := func(run string) error {
		_, err := ae.ExecuteActivity(acts.VerifyStart, activities.VerifyStartInput{Rollout: rollout, RunID: run, PlanDigest: digest, Signed: signed})
		return err
	}
	require.Error(t, start("run-1"), "refused as it is: another namespace, and a year old")

	// What a DB user with the worker's role INSERTs (the same SQL).
	v, err := acts.Keyring.WithClock(func() time.Time { return time.Now().Add(-365 * 24 * time.Hour) }).Verify(t.Context(), signed,
		approval.Gate{TemporalNamespace: "staging", Rollout: rollout, PlanDigest: digest, Decision: approval.DecisionStart})
	require.NoError(t, err)
	require.NoError(t, env.Store.RecordApproval(t.Context(), ledger.Approval{Rollout: rollout, Stage: "start:run-1", By: v.Principal.Name,
		Reason: st.Reason, PlanDigest: digest, Principal: v.Principal.Name, Method: string(v.Principal.Method),
		KeyFingerprint: v.Principal.KeyFingerprint, Signature: v.Signature, Payload: v.Payload, ReplayKey: v.ReplayKey}))

	require.Error(t, start("run-1"), "a start signed for staging, a year ago, counts in this namespace because an INSERTed row names it")
}
