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
)

// carol signs the start of plan q3 for the staging namespace; someone
// sends that signed start with the same plan to the worker of another
// namespace (whose ledger has never seen its nonce). The worker checks it
// against its own namespace, from the activity's info, not the workflow's
// input, and refuses it; the same start signed for its namespace passes.
func TestVerifyStartRefusesAStartSignedForAnotherNamespace(t *testing.T) {
	env := testenv.New(t)
	carol, acts, ae := oneSignerActs(t, env, "carol")
	rollout, digest := "fleetsaga/rollout/plan/q3-"+strings.ReplaceAll(t.Name(), "/", "-"), strings.Repeat("c4", 32)
	start := func(ns, run string) error {
		st := approvaltest.Statement(t, approval.Gate{TemporalNamespace: ns, Rollout: rollout, PlanDigest: digest, Decision: approval.DecisionStart}, "start plan q3", time.Now())
		_, err := ae.ExecuteActivity(acts.VerifyStart, activities.VerifyStartInput{Rollout: rollout, RunID: run, PlanDigest: digest, Signed: approvaltest.Sign(t, st, carol)})
		return err
	}
	require.ErrorContains(t, start("staging", "run-1"), string(approval.ReasonWrongGate))
	require.ErrorContains(t, start("", "run-1"), string(approval.ReasonWrongGate), "a statement naming no namespace")
	require.NoError(t, start(sdkTestNamespace, "run-2"))
}
