package activities_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
)

// alice's approval opens a gate, which records that it is spent; the
// rollout is reset to before the gate. What the reset run's gate reads
// from the ledger no longer counts her, the same signed approval sent
// again (as a reset re-applies an update) is refused as spent, and a new
// one of hers counts: the gate needs a new approval for the new pass.
func TestAnApprovalThatOpenedItsGateDoesNotOpenItAgain(t *testing.T) {
	env := testenv.New(t)
	alice, acts, ae := oneSignerActs(t, env, "alice")
	gate := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: "fleetsaga/rollout/plan/spent", Run: "run-1", Stage: "canary", PlanDigest: strings.Repeat("c3", 32), Decision: approval.DecisionApprove}
	in := activities.GateApprovalsInput{Gate: gate, RunID: "run-1"}
	verify := func(s approval.Signed) error {
		_, err := ae.ExecuteActivity(acts.VerifyApproval, activities.VerifyApprovalInput{Gate: gate, Signed: s, Policy: approval.Policy{}, RunID: "run-1"})
		return err
	}
	counted := func() []string {
		v, err := ae.ExecuteActivity(acts.GateApprovals, in)
		require.NoError(t, err)
		var who []string
		require.NoError(t, v.Get(&who))
		return who
	}
	first := approvaltest.Sign(t, approvaltest.Statement(t, gate, "reviewed", time.Now()), alice)
	require.NoError(t, verify(first))
	require.NoError(t, verify(first), "a retry before the gate opened counts as the first time")
	require.Equal(t, []string{"ssh:alice"}, counted())

	_, err := ae.ExecuteActivity(acts.SpendGateApprovals, in)
	require.NoError(t, err)
	_, err = ae.ExecuteActivity(acts.SpendGateApprovals, in)
	require.NoError(t, err, "a retried record changes nothing")

	require.Empty(t, counted(), "the pass that ran spent her approval")
	err = verify(first)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, failure.ApprovalRefused, app.Type())
	var reason string
	require.NoError(t, app.Details(&reason))
	require.Equal(t, string(approval.ReasonSpent), reason)

	again := approvaltest.Sign(t, approvaltest.Statement(t, gate, "reviewed again", time.Now()), alice)
	requireSpent(t, verify(again), "given in the run whose gate opened, it approves no pass")

	activities.PlayRun(t, "reset-run")
	_, err = ae.ExecuteActivity(acts.SpendGateApprovals, in)
	requireSpent(t, err, "a reset run passing the gate again on the spent approvals")
	require.NoError(t, verify(again), "a new approval of hers counts in the reset run")
	require.Equal(t, []string{"ssh:alice"}, counted())
	_, err = ae.ExecuteActivity(acts.SpendGateApprovals, in)
	require.NoError(t, err, "the reset run's gate opens on it")
}

func requireSpent(t *testing.T, err error, msg string) {
	t.Helper()
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app, msg)
	require.Equal(t, failure.ApprovalRefused, app.Type(), msg)
	var reason string
	require.NoError(t, app.Details(&reason))
	require.Equal(t, string(approval.ReasonSpent), reason, msg)
}
