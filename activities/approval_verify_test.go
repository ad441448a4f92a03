package activities_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/ledger"
)

// VerifyApproval on the real ledger: an approval signed by an allowed key
// counts and the ledger holds principal, key fingerprint and signature; an
// unsigned one, one by an unknown key, one for another digest, one
// replayed from another gate and one by the starter under four eyes are
// each refused with their reason and change nothing; two distinct
// approvers are needed where the policy says two.
func TestVerifyApprovalOnTheLedger(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	keys := map[string]ssh.Signer{}
	for _, who := range []string{"alice", "bob", "carol", "mallory"} {
		keys[who] = approvaltest.Key(t)
	}
	allowedKeys := map[string]ssh.Signer{"alice": keys["alice"], "bob": keys["bob"], "carol": keys["carol"]}
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, allowedKeys)})
	require.NoError(t, err)
	acts := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring}

	rollout := "fleetsaga/rollout/plan/q3"
	canary := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: rollout, Stage: "canary", PlanDigest: strings.Repeat("a1", 32)}
	rest := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: rollout, Stage: "rest", PlanDigest: strings.Repeat("b2", 32)}
	policy := approval.Policy{Approvers: 2, FourEyes: true}
	signed := func(who string, g approval.Gate) approval.Signed {
		g.Decision = approval.DecisionApprove
		return approvaltest.Sign(t, approvaltest.Statement(t, g, who+" reviewed", time.Now()), keys[who])
	}
	verify := func(in activities.VerifyApprovalInput) (activities.VerifyApprovalResult, error) {
		var ts testsuite.WorkflowTestSuite
		ae := ts.NewTestActivityEnvironment()
		ae.RegisterActivity(acts)
		v, err := ae.ExecuteActivity(acts.VerifyApproval, in)
		if err != nil {
			return activities.VerifyApprovalResult{}, err
		}
		var res activities.VerifyApprovalResult
		require.NoError(t, v.Get(&res))
		return res, nil
	}
	rows := func() []ledger.Approval {
		all, err := env.Store.Approvals(ctx, rollout)
		require.NoError(t, err)
		return all
	}

	// bob approves the rest's plan; his signature is then replayed at the canary.
	bobRest := signed("bob", rest)
	_, err = verify(activities.VerifyApprovalInput{Gate: rest, Signed: bobRest, Policy: policy, Starter: "ssh:alice"})
	require.NoError(t, err)
	replayed := bobRest

	for _, tc := range []struct {
		name   string
		signed approval.Signed
		want   approval.Reason
	}{
		{"unsigned", approval.Signed{Payload: signed("carol", canary).Payload}, approval.ReasonUnsigned},
		{"unknown key", signed("mallory", canary), approval.ReasonUnknownKey},
		{"another digest", signed("carol", approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: rollout, Stage: "canary", PlanDigest: strings.Repeat("ff", 32)}), approval.ReasonWrongGate},
		{"replayed from another gate", replayed, approval.ReasonWrongGate},
		{"the starter, under four eyes", signed("alice", canary), approval.ReasonFourEyes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := rows()
			_, err := verify(activities.VerifyApprovalInput{Gate: canary, Signed: tc.signed, Policy: policy, Starter: "ssh:alice"})
			var appErr *temporal.ApplicationError
			require.True(t, errors.As(err, &appErr), "%v", err)
			require.Equal(t, failure.ApprovalRefused, appErr.Type())
			require.True(t, appErr.NonRetryable())
			var reason string
			require.NoError(t, appErr.Details(&reason))
			require.Equal(t, string(tc.want), reason, appErr.Error())
			require.Equal(t, before, rows(), "a refused approval changes nothing")
		})
	}

	// The same signed approval at the same gate, sent again, is a replay:
	// the activity's retry of its own write is not.
	carol := signed("carol", canary)
	res, err := verify(activities.VerifyApprovalInput{Gate: canary, Signed: carol, Policy: policy, Starter: "ssh:alice"})
	require.NoError(t, err)
	require.Equal(t, "ssh:carol", res.Principal.Name)
	require.Equal(t, approval.Needed{Approvers: 1, Not: []string{"ssh:carol", "ssh:alice"}}, res.Needed, "two approvers where the plan says two")
	again, err := verify(activities.VerifyApprovalInput{Gate: canary, Signed: carol, Policy: policy, Starter: "ssh:alice"})
	require.NoError(t, err, "a retry after the write answers as the first time")
	require.Equal(t, res.Needed, again.Needed)

	res, err = verify(activities.VerifyApprovalInput{Gate: canary, Signed: signed("bob", canary), Policy: policy, Starter: "ssh:alice"})
	require.NoError(t, err)
	require.True(t, res.Needed.Open())

	var got []ledger.Approval
	for _, r := range rows() {
		if r.Stage == "canary" {
			got = append(got, r)
		}
	}
	require.Len(t, got, 2)
	require.Equal(t, "ssh:carol", got[0].Principal)
	require.Equal(t, ssh.FingerprintSHA256(keys["carol"].PublicKey()), got[0].KeyFingerprint)
	require.Contains(t, got[0].Signature, "BEGIN SSH SIGNATURE")
	require.Equal(t, canary.PlanDigest, got[0].PlanDigest)

	// What the ledger holds re-verifies offline.
	signers, err := approval.ParseAllowedSigners(mustRead(t, approvaltest.AllowedSigners(t, allowedKeys)))
	require.NoError(t, err)
	v, err := env.Store.VerifyAudit(ctx, activities.CheckStoredApproval(signers, nil))
	require.NoError(t, err)
	require.Equal(t, 3, v.Signatures)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// VerifyStart names who started a rollout with which plan, records it
// once (a retry answers the same), and refuses a start signed for another
// plan or by an unknown key.
func TestVerifyStartOnTheLedger(t *testing.T) {
	env := testenv.New(t)
	alice, mallory := approvaltest.Key(t), approvaltest.Key(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice})})
	require.NoError(t, err)
	acts := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring}
	rollout, digest := "fleetsaga/rollout/plan/q3", strings.Repeat("c3", 32)
	start := func(key ssh.Signer, signedDigest string) (approval.Principal, error) {
		st := approvaltest.Statement(t, approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: rollout, PlanDigest: signedDigest, Decision: approval.DecisionStart}, "start plan q3", time.Now())
		in := activities.VerifyStartInput{Rollout: rollout, RunID: "run-1", PlanDigest: digest, Signed: approvaltest.Sign(t, st, key)}
		var ts testsuite.WorkflowTestSuite
		ae := ts.NewTestActivityEnvironment()
		ae.RegisterActivity(acts)
		var p approval.Principal
		v, err := ae.ExecuteActivity(acts.VerifyStart, in)
		if err == nil {
			require.NoError(t, v.Get(&p))
		}
		return p, err
	}
	p, err := start(alice, digest)
	require.NoError(t, err)
	require.Equal(t, "ssh:alice", p.Name)
	_, err = start(mallory, digest)
	require.ErrorContains(t, err, string(approval.ReasonUnknownKey))
	_, err = start(alice, strings.Repeat("d4", 32))
	require.ErrorContains(t, err, string(approval.ReasonWrongGate))
	rows, err := env.Store.Approvals(context.Background(), rollout)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, "start:run-1", rows[0].Stage)
	require.Equal(t, digest, rows[0].PlanDigest)
	require.Equal(t, activities.StoredApprovalGate(rows[0]).Decision, approval.DecisionStart)
}

// A worker with no keyring verifies nothing: it accepts an approval at a
// default gate as typed, recorded as method "unsigned" with no principal
// (a signature sent along is neither checked nor kept), refuses a gate
// whose policy asks for more (NoKeyring), and answers a signed start with
// no principal. The audit check skips what holds no signature.
func TestVerifyApprovalWithoutAKeyringAcceptsUnsignedAtDefaultGatesOnly(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{})
	require.NoError(t, err)
	require.False(t, keyring.Configured())
	acts := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring}
	var ts testsuite.WorkflowTestSuite
	ae := ts.NewTestActivityEnvironment()
	ae.RegisterActivity(acts)
	rollout := "fleetsaga/rollout/plan/nokeys"
	gate := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: rollout, Stage: "canary", PlanDigest: strings.Repeat("e5", 32)}
	somebody := approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: rollout, Stage: "canary", PlanDigest: gate.PlanDigest, Decision: approval.DecisionApprove},
		"ok", time.Now()), approvaltest.Key(t))

	_, err = ae.ExecuteActivity(acts.VerifyApproval, activities.VerifyApprovalInput{Gate: gate, Policy: approval.Policy{Approvers: 2}, By: "alice", Reason: "ok"})
	require.ErrorContains(t, err, string(approval.ReasonNoKeyring))
	rows, err := env.Store.Approvals(ctx, rollout)
	require.NoError(t, err)
	require.Empty(t, rows, "a refused approval records nothing")

	v, err := ae.ExecuteActivity(acts.VerifyApproval, activities.VerifyApprovalInput{Gate: gate, Signed: somebody, Policy: approval.Policy{Approvers: 1}, By: "alice", Reason: "canary healthy"})
	require.NoError(t, err)
	var res activities.VerifyApprovalResult
	require.NoError(t, v.Get(&res))
	require.Equal(t, approval.Principal{Name: "alice", Method: approval.MethodUnsigned}, res.Principal)
	require.True(t, res.Needed.Open())
	rows, err = env.Store.Approvals(ctx, rollout)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, []string{"alice", "canary healthy", ledger.MethodUnsigned, "", "", gate.PlanDigest},
		[]string{rows[0].By, rows[0].Reason, rows[0].Method, rows[0].Principal, rows[0].Signature, rows[0].PlanDigest})

	v, err = ae.ExecuteActivity(acts.VerifyStart, activities.VerifyStartInput{Rollout: rollout, RunID: "run-1", PlanDigest: gate.PlanDigest, Signed: somebody})
	require.NoError(t, err)
	var starter approval.Principal
	require.NoError(t, v.Get(&starter))
	require.Empty(t, starter.Name, "nothing proves who started it")

	audit, err := env.Store.VerifyAudit(ctx, activities.CheckStoredApproval(nil, nil))
	require.NoError(t, err)
	require.Zero(t, audit.Signatures)
}

// A rollout whose start a worker with a keyring verified lands on a
// worker without one (misconfigured, or rogue): that worker refuses its
// approvals rather than take a typed name, and one whose least policy
// asks for two approvers refuses a default gate too. Nothing is recorded.
func TestVerifyApprovalWithoutAKeyringRefusesARunWithAVerifiedStart(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{})
	require.NoError(t, err)
	var ts testsuite.WorkflowTestSuite
	ae := ts.NewTestActivityEnvironment()
	acts := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring}
	ae.RegisterActivity(acts)
	rollout := "fleetsaga/rollout/plan/verified-start"
	gate := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: rollout, Stage: "canary", PlanDigest: strings.Repeat("e6", 32)}
	_, err = ae.ExecuteActivity(acts.VerifyApproval, activities.VerifyApprovalInput{Gate: gate, Policy: approval.Policy{Approvers: 1}, Starter: "ssh:carol", By: "alice", Reason: "ok"})
	require.ErrorContains(t, err, "start was verified, so only verified approvals count")
	require.ErrorContains(t, err, string(approval.ReasonNoKeyring))

	floor := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring, Minimum: approval.Minimum{Approvers: 2}}
	ae2 := ts.NewTestActivityEnvironment()
	ae2.RegisterActivity(floor)
	_, err = ae2.ExecuteActivity(floor.VerifyApproval, activities.VerifyApprovalInput{Gate: gate, Policy: approval.Policy{Approvers: 1}, By: "alice", Reason: "ok"})
	require.ErrorContains(t, err, string(approval.ReasonNoKeyring), "the worker's floor of two approvers needs verified ones")
	rows, err := env.Store.Approvals(ctx, rollout)
	require.NoError(t, err)
	require.Empty(t, rows)
}

// requireRefusedFor asserts err is the activity's refusal for reason.
func requireRefusedFor(t *testing.T, err error, want approval.Reason) {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, failure.ApprovalRefused, appErr.Type())
	var reason string
	require.NoError(t, appErr.Details(&reason))
	require.Equal(t, string(want), reason, appErr.Error())
}

// alice signs two statements for one gate with the same nonce: one for
// the plan it shows, one for the plan it shows after it planned again.
// The second is no retry of the first (other bytes): it is refused as a
// replay, so the gate counts nothing the ledger lacks.
func TestAReusedNonceOverAnotherPlanIsRefusedAsReplayed(t *testing.T) {
	env := testenv.New(t)
	alice := approvaltest.Key(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice})})
	require.NoError(t, err)
	acts := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring}
	first := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: "fleetsaga/rollout/plan/nonce", Run: "run-1", Stage: "canary", PlanDigest: strings.Repeat("e5", 32), Decision: approval.DecisionApprove}
	second := first
	second.PlanDigest = strings.Repeat("f6", 32)
	st1 := approvaltest.Statement(t, first, "reviewed plan 1", time.Now())
	st2 := st1
	st2.PlanDigest, st2.Reason = second.PlanDigest, "reviewed plan 2"

	_, err = approveWith(acts, activities.VerifyApprovalInput{Gate: first, Signed: approvaltest.Sign(t, st1, alice), RunID: "run-1"})
	require.NoError(t, err)
	_, err = approveWith(acts, activities.VerifyApprovalInput{Gate: second, Signed: approvaltest.Sign(t, st2, alice), RunID: "run-1"})
	requireRefusedFor(t, err, approval.ReasonReplayed)
	rows, err := env.Store.Approvals(context.Background(), first.Rollout)
	require.NoError(t, err)
	require.Len(t, rows, 1, "the refused approval is not recorded")
}

// A people file arrives (the worker restarts with it) while a gate that
// needs two distinct approvers waits with alice's approval, recorded as
// "ssh:alice". Her recorded row is resolved through the new file: it is
// the person alice's, so her second approval is refused, not counted as
// a second approver.
func TestOnePersonDoesNotCountTwiceWhenThePeopleFileArrives(t *testing.T) {
	env := testenv.New(t)
	alice, bob := approvaltest.Key(t), approvaltest.Key(t)
	signers := approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice, "bob": bob})
	before, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: signers})
	require.NoError(t, err)
	people := t.TempDir() + "/people"
	require.NoError(t, os.WriteFile(people, []byte("alice ssh:alice\nbob ssh:bob\n"), 0o600))
	after, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: signers, People: people})
	require.NoError(t, err)

	gate := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: "fleetsaga/rollout/plan/people", Run: "run-1", Stage: "canary", PlanDigest: strings.Repeat("a7", 32), Decision: approval.DecisionApprove}
	policy := approval.Policy{Approvers: 2}
	_, err = approveWith(&activities.ApprovalActivities{Store: env.Store, Keyring: before}, activities.VerifyApprovalInput{Gate: gate, Policy: policy, RunID: "run-1",
		Signed: approvaltest.Sign(t, approvaltest.Statement(t, gate, "first", time.Now()), alice)})
	require.NoError(t, err)

	actsAfter := &activities.ApprovalActivities{Store: env.Store, Keyring: after}
	_, err = approveWith(actsAfter, activities.VerifyApprovalInput{Gate: gate, Policy: policy, RunID: "run-1",
		Signed: approvaltest.Sign(t, approvaltest.Statement(t, gate, "again", time.Now()), alice)})
	requireRefusedFor(t, err, approval.ReasonAlreadyApproved)
	res, err := approveWith(actsAfter, activities.VerifyApprovalInput{Gate: gate, Policy: policy, RunID: "run-1",
		Signed: approvaltest.Sign(t, approvaltest.Statement(t, gate, "second", time.Now()), bob)})
	require.NoError(t, err, "bob is the second person")
	require.True(t, res.Needed.Open(), "alice and bob open the gate: %s", res.Needed)
}

// A rollout with four eyes was started by alice on the build before
// identities, whose VerifyStart answered the bare principal "alice" (the
// workflow keeps it as its starter), and waits at its gate across the
// upgrade. On the new build alice is "ssh:alice": the legacy starter is
// read as that identity, and her approval is refused.
func TestTheLegacyStarterMayNotApproveHerOwnRolloutAcrossTheUpgrade(t *testing.T) {
	env := testenv.New(t)
	alice := approvaltest.Key(t)
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, map[string]ssh.Signer{"alice": alice})})
	require.NoError(t, err)
	acts := &activities.ApprovalActivities{Store: env.Store, Keyring: keyring}
	gate := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: "fleetsaga/rollout/plan/upgrade", Run: "run-1", Stage: "canary", PlanDigest: strings.Repeat("b8", 32), Decision: approval.DecisionApprove}
	_, err = approveWith(acts, activities.VerifyApprovalInput{Gate: gate, Policy: approval.Policy{FourEyes: true}, RunID: "run-1",
		Starter: "alice", // what VerifyStart answered before identities
		Signed:  approvaltest.Sign(t, approvaltest.Statement(t, gate, "lgtm", time.Now()), alice)})
	requireRefusedFor(t, err, approval.ReasonFourEyes)
}
