package activities_test

import (
	"context"
	"os"
	"path/filepath"
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

// redteamActs registers the approval activities over keyring in a fresh
// activity environment.
func redteamActs(t *testing.T, acts *activities.ApprovalActivities) *testsuite.TestActivityEnvironment {
	t.Helper()
	var ts testsuite.WorkflowTestSuite
	ae := ts.NewTestActivityEnvironment()
	ae.RegisterActivity(acts)
	return ae
}

func redteamApprove(ae *testsuite.TestActivityEnvironment, acts *activities.ApprovalActivities, in activities.VerifyApprovalInput) (activities.VerifyApprovalResult, error) {
	var res activities.VerifyApprovalResult
	v, err := ae.ExecuteActivity(acts.VerifyApproval, in)
	if err == nil {
		err = v.Get(&res)
	}
	return res, err
}

// The tables' owner (the worker's role today) moves alice's signed
// approval of a plan's first run to the gate of its next run: the same
// rollout ID (the plan's name), stage and plan digest, which a statement
// binds, but not the run, which it does not. The owner disables the
// append-only trigger and rewrites the row's stage, so one row still
// holds the signature (the copy check of 1c18eb9 sees nothing), and a
// month later the next run's gate, which reads the ledger before it
// waits, counts alice: the gate opens with no approval of that run.
func TestRedteamAnEarlierRunsApprovalMovedInTheLedgerOpensTheNextRunsGate(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	alice := approvaltest.Key(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice})})
	require.NoError(t, err)
	acts := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring}
	ae := redteamActs(t, acts)
	gate := approval.Gate{Rollout: "fleetsaga/rollout/plan/moved-" + t.Name(), Stage: "canary", PlanDigest: strings.Repeat("d4", 32), Decision: approval.DecisionApprove}
	signed := approvaltest.Sign(t, approvaltest.Statement(t, gate, "reviewed run 1", time.Now()), alice)
	_, err = redteamApprove(ae, acts, activities.VerifyApprovalInput{Gate: gate, Signed: signed, RunID: "run-1"})
	require.NoError(t, err)

	db := env.Store.DB()
	for _, sql := range []string{
		`ALTER TABLE rollout_approval DISABLE TRIGGER rollout_approval_no_change`,
		`UPDATE rollout_approval SET stage = 'canary@run:run-2' WHERE rollout_id = '` + gate.Rollout + `' AND stage = 'canary@run:run-1'`,
		`ALTER TABLE rollout_approval ENABLE TRIGGER rollout_approval_no_change`,
	} {
		_, err := db.ExecContext(ctx, sql)
		require.NoError(t, err, "the tables' owner may: %s", sql)
	}

	later := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring.WithClock(func() time.Time { return time.Now().Add(30 * 24 * time.Hour) })}
	ae2 := redteamActs(t, later)
	v, err := ae2.ExecuteActivity(later.GateApprovals, activities.GateApprovalsInput{Gate: gate, RunID: "run-2"})
	require.NoError(t, err)
	var counted []string
	require.NoError(t, v.Get(&counted))
	require.Empty(t, counted, "an approval signed for an earlier run, a month ago, must not count at this run's gate")
}

// alice (one SSH key) signs two statements for one gate with the same
// nonce: one for the plan the gate shows, one for the plan it shows after
// it planned again. The second is taken as a retry of the first (same
// replay key, rollout, stage and person), counted, and never recorded:
// the gate opens on a plan whose approval is not in the ledger.
func TestRedteamAReusedNonceCountsAnApprovalTheLedgerDoesNotHold(t *testing.T) {
	env := testenv.New(t)
	alice := approvaltest.Key(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice})})
	require.NoError(t, err)
	acts := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring}
	ae := redteamActs(t, acts)
	first := approval.Gate{Rollout: "fleetsaga/rollout/plan/nonce-" + t.Name(), Stage: "canary", PlanDigest: strings.Repeat("e5", 32), Decision: approval.DecisionApprove}
	second := first
	second.PlanDigest = strings.Repeat("f6", 32)
	st1 := approvaltest.Statement(t, first, "reviewed plan 1", time.Now())
	st2 := st1
	st2.PlanDigest, st2.Reason = second.PlanDigest, "reviewed plan 2"

	_, err = redteamApprove(ae, acts, activities.VerifyApprovalInput{Gate: first, Signed: approvaltest.Sign(t, st1, alice), RunID: "run-1"})
	require.NoError(t, err)
	res, err := redteamApprove(ae, acts, activities.VerifyApprovalInput{Gate: second, Signed: approvaltest.Sign(t, st2, alice), RunID: "run-1"})
	if err != nil {
		return // refused: nothing counted that the ledger lacks
	}
	require.Equal(t, "ssh:alice", res.Principal.Name, "the workflow counts this answer")
	rows, err := env.Store.Approvals(context.Background(), first.Rollout)
	require.NoError(t, err)
	var digests []string
	for _, r := range rows {
		digests = append(digests, r.PlanDigest)
	}
	require.Contains(t, digests, second.PlanDigest, "an approval the gate counted must be in the ledger")
}

// A people file is added (or an OIDC issuer next to the SSH keys) while a
// gate that needs two distinct approvers waits with alice's approval,
// recorded as "ssh:alice" (the workflow counts that name). After the
// worker restarts, alice is the person "alice": her recorded row no
// longer verifies as itself (recorded as ssh:alice, signed by alice), so
// it is not among the approvers so far, and her second approval is taken.
// The workflow then counts ["ssh:alice", "alice"]: two approvers, one
// person.
func TestRedteamOnePersonCountsTwiceWhenThePeopleFileArrives(t *testing.T) {
	env := testenv.New(t)
	alice, bob := approvaltest.Key(t), approvaltest.Key(t)
	signers := approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice, "bob": bob})
	before, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: signers})
	require.NoError(t, err)
	people := filepath.Join(t.TempDir(), "people")
	require.NoError(t, os.WriteFile(people, []byte("alice ssh:alice\nbob ssh:bob\n"), 0o600))
	after, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: signers, People: people})
	require.NoError(t, err)

	gate := approval.Gate{Rollout: "fleetsaga/rollout/plan/people-" + t.Name(), Stage: "canary", PlanDigest: strings.Repeat("a7", 32), Decision: approval.DecisionApprove}
	policy := approval.Policy{Approvers: 2}
	actsBefore := &activities.ApprovalActivities{Store: env.Store, Keyring: before}
	res1, err := redteamApprove(redteamActs(t, actsBefore), actsBefore, activities.VerifyApprovalInput{Gate: gate, Policy: policy, RunID: "run-1",
		Signed: approvaltest.Sign(t, approvaltest.Statement(t, gate, "first", time.Now()), alice)})
	require.NoError(t, err)

	actsAfter := &activities.ApprovalActivities{Store: env.Store, Keyring: after}
	res2, err := redteamApprove(redteamActs(t, actsAfter), actsAfter, activities.VerifyApprovalInput{Gate: gate, Policy: policy, RunID: "run-1",
		Signed: approvaltest.Sign(t, approvaltest.Statement(t, gate, "again", time.Now()), alice)})
	if err == nil {
		require.Equal(t, res1.Principal.Name, res2.Principal.Name,
			"alice's second approval was taken as a new approver (%s, then %s): the workflow counts one person twice", res1.Principal.Name, res2.Principal.Name)
	}
}

// A rollout with four eyes is started by alice on the build before this
// change, whose VerifyStart answered the bare principal "alice" (the
// workflow keeps that answer in its history as its starter), and waits
// at its gate while the workers are upgraded (docs/DEPLOYING.md, "Deploying
// a new build while a rollout is in flight"). On the new build alice is
// "ssh:alice", not "alice": she approves her own rollout.
func TestRedteamTheStarterApprovesHerOwnRolloutAcrossTheUpgrade(t *testing.T) {
	env := testenv.New(t)
	alice := approvaltest.Key(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice})})
	require.NoError(t, err)
	acts := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring}
	gate := approval.Gate{Rollout: "fleetsaga/rollout/plan/upgrade-" + t.Name(), Stage: "canary", PlanDigest: strings.Repeat("b8", 32), Decision: approval.DecisionApprove}
	_, err = redteamApprove(redteamActs(t, acts), acts, activities.VerifyApprovalInput{Gate: gate, Policy: approval.Policy{FourEyes: true}, RunID: "run-1",
		Starter: "alice", // what VerifyStart answered before the change (git show 9c7df27:approval/verify.go)
		Signed:  approvaltest.Sign(t, approvaltest.Statement(t, gate, "lgtm", time.Now()), alice)})
	require.Error(t, err, "alice started this rollout: four eyes must refuse her approval")
}
