package activities_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
)

// Alice's approval opens a gate and is spent. A database user
// with the worker's role runs one DELETE on rollout_gate_pass: no
// trigger stops it (rollout_approval's append-only trigger has no twin
// here, and the table is in no audit chain), and the reset run's gate
// counts her spent approval again.
func TestGatePassCannotBeDeletedToUnspendApprovals(t *testing.T) {
	env := testenv.New(t)
	alice, acts, ae := oneSignerActs(t, env, "alice")
	gate := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: "fleetsaga/rollout/plan/unspent-" + strings.ReplaceAll(t.Name(), "/", "-"),
		Run: "run-1", Stage: "canary", PlanDigest: strings.Repeat("c6", 32), Decision: approval.DecisionApprove}
	in := activities.GateApprovalsInput{Gate: gate, RunID: "run-1"}
	counted := func() []string {
		v, err := ae.ExecuteActivity(acts.GateApprovals, in)
		require.NoError(t, err)
		var who []string
		require.NoError(t, v.Get(&who))
		return who
	}
	signed := approvaltest.Sign(t, approvaltest.Statement(t, gate, "reviewed", time.Now()), alice)
	_, err := ae.ExecuteActivity(acts.VerifyApproval, activities.VerifyApprovalInput{Gate: gate, Signed: signed, RunID: "run-1"})
	require.NoError(t, err)
	_, err = ae.ExecuteActivity(acts.SpendGateApprovals, in)
	require.NoError(t, err)
	require.Empty(t, counted())

	_, err = env.Store.DB().ExecContext(t.Context(), `DELETE FROM rollout_gate_pass WHERE rollout_id = $1`, gate.Rollout)
	assert.Error(t, err, "the worker's role deletes a gate pass with one statement")
	require.Empty(t, counted(), "the spent approval counts again at the reset gate")
}
