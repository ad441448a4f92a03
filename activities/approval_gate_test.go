package activities_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
)

// A database user with the worker's role INSERTs approvals under a
// signed gate's ledger key: one unsigned, one claiming to be a signed SSH
// approval by bob with a statement but no signature, one copying the
// columns of an OIDC approval (which keeps no token). None counts:
// GateApprovals, what a reset run's gate reads, answers only alice, whose
// recorded signature verifies again; and VerifyApproval does not count
// the forged rows as approvers either (bob may still approve).
func TestGateApprovalsCountsOnlyWhatVerifiesAgain(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	alice, bob := approvaltest.Key(t), approvaltest.Key(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice, "bob": bob})})
	require.NoError(t, err)
	acts := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring}
	var ts testsuite.WorkflowTestSuite
	ae := ts.NewTestActivityEnvironment()
	ae.RegisterActivity(acts)
	rollout := "fleetsaga/rollout/plan/forged-" + strings.ReplaceAll(t.Name(), "/", "-")
	gate := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: rollout, Run: "run-1", Stage: "canary", PlanDigest: strings.Repeat("a1", 32), Decision: approval.DecisionApprove}
	policy := approval.Policy{Approvers: 3}
	approve := func(key ssh.Signer, g approval.Gate) (activities.VerifyApprovalResult, error) {
		signed := approvaltest.Sign(t, approvaltest.Statement(t, g, "reviewed", time.Now()), key)
		v, err := ae.ExecuteActivity(acts.VerifyApproval, activities.VerifyApprovalInput{Gate: g, Signed: signed, Policy: policy, RunID: "run-1"})
		var res activities.VerifyApprovalResult
		if err == nil {
			require.NoError(t, v.Get(&res))
		}
		return res, err
	}
	_, err = approve(alice, gate)
	require.NoError(t, err)

	forgedStatement := string(approvaltest.Statement(t, gate, "trust me", time.Now()).Payload())
	for _, sql := range []string{
		`INSERT INTO rollout_approval (rollout_id, stage, approved_by, reason, plan_digest, method) VALUES ($1, 'canary@run:run-1', 'carol', 'ok', $2, 'unsigned')`,
		`INSERT INTO rollout_approval (rollout_id, stage, approved_by, reason, plan_digest, principal, method, payload, replay_key)
			VALUES ($1, 'canary@run:run-1', 'ssh:bob', 'ok', $2, 'ssh:bob', 'ssh', '` + forgedStatement + `', 'forged-nonce')`,
		`INSERT INTO rollout_approval (rollout_id, stage, approved_by, reason, plan_digest, principal, method, key_fingerprint, payload, replay_key)
			VALUES ($1, 'canary@run:run-1', 'oidc:https://idp#dana', 'ok', $2, 'oidc:https://idp#dana', 'oidc', 'https://idp#dana', '` + forgedStatement + `', 'idtoken:forged')`,
	} {
		_, err := env.Store.DB().ExecContext(ctx, sql, rollout, gate.PlanDigest)
		require.NoError(t, err, "the worker's role may INSERT")
	}

	v, err := ae.ExecuteActivity(acts.GateApprovals, activities.GateApprovalsInput{Gate: gate, RunID: "run-1"})
	require.NoError(t, err)
	var counted []string
	require.NoError(t, v.Get(&counted))
	require.Equal(t, []string{"ssh:alice"}, counted, "only the approval whose signature verifies again counts")

	res, err := approve(bob, gate)
	require.NoError(t, err, "the forged row in bob's name does not stop bob")
	require.Equal(t, approval.Needed{Approvers: 1, Not: []string{"ssh:alice", "ssh:bob"}}, res.Needed, "the forged rows are no approvers")
}

// alice approves a gate's plan; the gate plans again and shows a new
// plan; alice approves that one too. Both approvals are in the ledger,
// and the new plan's gate counts her (the ledger used to drop the second
// row: one per stage and approver).
func TestAnApprovalOfTheGatesNewPlanIsRecordedAndCounted(t *testing.T) {
	env := testenv.New(t)
	alice := approvaltest.Key(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice})})
	require.NoError(t, err)
	acts := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring}
	var ts testsuite.WorkflowTestSuite
	ae := ts.NewTestActivityEnvironment()
	ae.RegisterActivity(acts)
	rollout := "fleetsaga/rollout/plan/replanned"
	first := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: rollout, Run: "run-1", Stage: "canary", PlanDigest: strings.Repeat("a1", 32), Decision: approval.DecisionApprove}
	second := first
	second.PlanDigest = strings.Repeat("b2", 32)
	for _, g := range []approval.Gate{first, second} {
		signed := approvaltest.Sign(t, approvaltest.Statement(t, g, "reviewed", time.Now()), alice)
		_, err := ae.ExecuteActivity(acts.VerifyApproval, activities.VerifyApprovalInput{Gate: g, Signed: signed, Policy: approval.Policy{}, RunID: "run-1"})
		require.NoError(t, err)
	}
	rows, err := env.Store.Approvals(context.Background(), rollout)
	require.NoError(t, err)
	require.Len(t, rows, 2, "every approval the workflow counted is in the ledger")
	require.Equal(t, second.PlanDigest, rows[1].PlanDigest)
	v, err := ae.ExecuteActivity(acts.GateApprovals, activities.GateApprovalsInput{Gate: second, RunID: "run-1"})
	require.NoError(t, err)
	var counted []string
	require.NoError(t, v.Get(&counted))
	require.Equal(t, []string{"ssh:alice"}, counted)
}

// A role that owns the ledger's tables (the worker's, today) drops the
// index that keeps a signature to one row, and copies alice's signed
// approval of a plan's first run under the gate of its second run (the
// same rollout ID, stage and plan). The copy verifies, but another row
// holds its signature: the second run's gate does not count it (nor, now
// that the rows cannot say which is the original, the first run's).
func TestACopiedApprovalDoesNotCountAtAnotherRunsGate(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	alice := approvaltest.Key(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice})})
	require.NoError(t, err)
	acts := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring}
	var ts testsuite.WorkflowTestSuite
	ae := ts.NewTestActivityEnvironment()
	ae.RegisterActivity(acts)
	gate := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: "fleetsaga/rollout/plan/again", Run: "run-1", Stage: "canary", PlanDigest: strings.Repeat("c3", 32), Decision: approval.DecisionApprove}
	signed := approvaltest.Sign(t, approvaltest.Statement(t, gate, "reviewed", time.Now()), alice)
	_, err = ae.ExecuteActivity(acts.VerifyApproval, activities.VerifyApprovalInput{Gate: gate, Signed: signed, RunID: "run-1"})
	require.NoError(t, err)

	counted := func(run string) []string {
		v, err := ae.ExecuteActivity(acts.GateApprovals, activities.GateApprovalsInput{Gate: gate, RunID: run})
		require.NoError(t, err)
		var out []string
		require.NoError(t, v.Get(&out))
		return out
	}
	require.Equal(t, []string{"ssh:alice"}, counted("run-1"), "the original counts at its own run's gate")

	db := env.Store.DB()
	_, err = db.ExecContext(ctx, `DROP INDEX rollout_approval_replay_once`)
	require.NoError(t, err, "the tables' owner may drop their indexes")
	_, err = db.ExecContext(ctx, `INSERT INTO rollout_approval (rollout_id, stage, approved_by, reason, plan_digest, principal, method, key_fingerprint, signature, payload, replay_key)
		SELECT rollout_id, 'canary@run:run-2', approved_by, reason, plan_digest, principal, method, key_fingerprint, signature, payload, replay_key
		FROM rollout_approval WHERE stage = 'canary@run:run-1'`)
	require.NoError(t, err)

	require.Empty(t, counted("run-2"), "the copy counts nowhere")
	require.Empty(t, counted("run-1"), "a signature two rows hold counts for neither")
}

// oneSignerActs are approval activities on env's ledger whose keyring
// trusts one SSH key, the principal name's, in a fresh activity environment.
func oneSignerActs(t *testing.T, env *testenv.Env, name string) (ssh.Signer, *activities.ApprovalActivities, *testsuite.TestActivityEnvironment) {
	t.Helper()
	key := approvaltest.Key(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{name: key})})
	require.NoError(t, err)
	acts := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring}
	return key, acts, approvalEnv(acts)
}

// approvalEnv registers acts in a fresh activity environment.
func approvalEnv(acts *activities.ApprovalActivities) *testsuite.TestActivityEnvironment {
	var ts testsuite.WorkflowTestSuite
	ae := ts.NewTestActivityEnvironment()
	ae.RegisterActivity(acts)
	return ae
}

// approveWith runs VerifyApproval over acts.
func approveWith(acts *activities.ApprovalActivities, in activities.VerifyApprovalInput) (activities.VerifyApprovalResult, error) {
	var res activities.VerifyApprovalResult
	v, err := approvalEnv(acts).ExecuteActivity(acts.VerifyApproval, in)
	if err == nil {
		err = v.Get(&res)
	}
	return res, err
}

// countedAt is what GateApprovals answers over acts for gate in run.
func countedAt(t *testing.T, acts *activities.ApprovalActivities, gate approval.Gate, run string) []string {
	t.Helper()
	v, err := approvalEnv(acts).ExecuteActivity(acts.GateApprovals, activities.GateApprovalsInput{Gate: gate, RunID: run})
	require.NoError(t, err)
	var out []string
	require.NoError(t, v.Get(&out))
	return out
}

// The tables' owner (the worker's role today) moves alice's signed
// approval of a plan's first run to the gate of its next run (same
// rollout ID, stage and plan digest), with the append-only trigger
// disabled so one row still holds the signature. Her statement names
// run 1: the next run's gate, which reads the ledger before it waits,
// does not count it.
func TestAnApprovalMovedInTheLedgerToAnotherRunsGateDoesNotCount(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	alice := approvaltest.Key(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice})})
	require.NoError(t, err)
	acts := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring}
	gate := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: "fleetsaga/rollout/plan/moved", Run: "run-1", Stage: "canary", PlanDigest: strings.Repeat("d4", 32), Decision: approval.DecisionApprove}
	signed := approvaltest.Sign(t, approvaltest.Statement(t, gate, "reviewed run 1", time.Now()), alice)
	_, err = approveWith(acts, activities.VerifyApprovalInput{Gate: gate, Signed: signed, RunID: "run-1"})
	require.NoError(t, err)

	for _, sql := range []string{
		`ALTER TABLE rollout_approval DISABLE TRIGGER rollout_approval_no_change`,
		`UPDATE rollout_approval SET stage = 'canary@run:run-2' WHERE rollout_id = '` + gate.Rollout + `' AND stage = 'canary@run:run-1'`,
		`ALTER TABLE rollout_approval ENABLE TRIGGER rollout_approval_no_change`,
	} {
		_, err := env.Store.DB().ExecContext(ctx, sql)
		require.NoError(t, err, "the tables' owner may: %s", sql)
	}
	require.Empty(t, countedAt(t, acts, gate, "run-2"), "an approval signed for run 1 does not count at run 2's gate")
}

// A reset run's gate counts a recorded approval again only as if it had
// just arrived: alice's approval, recorded a month before the gate reads
// it, is past the keyring's max age and does not count.
func TestARecordedApprovalOlderThanTheMaxAgeDoesNotCountAgain(t *testing.T) {
	env := testenv.New(t)
	alice := approvaltest.Key(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice})})
	require.NoError(t, err)
	acts := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring}
	gate := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: "fleetsaga/rollout/plan/stale", Run: "run-1", Stage: "canary", PlanDigest: strings.Repeat("d5", 32), Decision: approval.DecisionApprove}
	signed := approvaltest.Sign(t, approvaltest.Statement(t, gate, "reviewed", time.Now()), alice)
	_, err = approveWith(acts, activities.VerifyApprovalInput{Gate: gate, Signed: signed, RunID: "run-1"})
	require.NoError(t, err)
	require.Equal(t, []string{"ssh:alice"}, countedAt(t, acts, gate, "run-1"), "a fresh recorded approval counts")

	later := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring.WithClock(func() time.Time { return time.Now().Add(30 * 24 * time.Hour) })}
	require.Empty(t, countedAt(t, later, gate, "run-1"), "a month later it is no fresh approval")
}
