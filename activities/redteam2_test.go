package activities_test

// Red team 2, on the real ledger: a database user's rows against
// VerifyStart and VerifyApproval. Each test asserts the protection; a
// failing one is an attack that works.

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
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
	"github.com/fleetsaga/fleetsaga/ledger"
)

// mallory may start rollouts (operator role) and is an allowed SSH
// signer; the plan's gate needs four eyes. She starts the rollout with a
// "sealed ID token" of garbage: run-1's VerifyStart refuses it. A
// database user INSERTs one rollout_approval row under "start:run-1"
// (the original run ID, on the run's page) with the start's payload,
// method "oidc" and principal carol; mallory resets the run to before
// VerifyStart. The reset run's VerifyStart counted the row as carol's
// start (recordedStart opened no token, with no issuer configured at
// all), and mallory's own approval then passed four eyes. The row now
// counts only once the run's own sealed token opens and verifies as its
// token and person: the reset run's start is refused.
func TestAnInsertedOIDCStartRowMakesAnyoneTheStarter(t *testing.T) {
	env := testenv.New(t)
	mallory, acts, ae := oneSignerActs(t, env, "mallory")
	rollout, digest := "fleetsaga/rollout/plan/rt2-"+strings.ReplaceAll(t.Name(), "/", "-"), strings.Repeat("e7", 32)
	startGate := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: rollout, PlanDigest: digest, Decision: approval.DecisionStart}
	st := approvaltest.Statement(t, startGate, "start plan q3", time.Now())
	signed := approval.Signed{Payload: string(st.Payload()), SealedIDToken: "AAAA"}
	start := func() (approval.Principal, error) {
		var p approval.Principal
		v, err := ae.ExecuteActivity(acts.VerifyStart, activities.VerifyStartInput{Rollout: rollout, RunID: "run-1", PlanDigest: digest, Signed: signed})
		if err == nil {
			require.NoError(t, v.Get(&p))
		}
		return p, err
	}
	_, err := start()
	require.Error(t, err, "run-1: a garbage token on a worker with no issuer is refused")

	// The database user's INSERT, the columns the worker itself writes.
	require.NoError(t, env.Store.RecordApproval(t.Context(), ledger.Approval{Rollout: rollout, Stage: "start:run-1",
		By: "oidc:https://idp.example#carol", Reason: st.Reason, PlanDigest: digest, Principal: "oidc:https://idp.example#carol",
		Method: "oidc", KeyFingerprint: "https://idp.example#carol", Payload: signed.Payload, ReplayKey: "idtoken:forged"}))

	who, err := start()
	if err == nil {
		// What follows: mallory approves her own rollout past four eyes.
		gate := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: rollout, Run: "run-1", Stage: "canary", PlanDigest: strings.Repeat("f8", 32), Decision: approval.DecisionApprove}
		_, aerr := approveWith(acts, activities.VerifyApprovalInput{Gate: gate, RunID: "run-1", Starter: who.Name,
			Policy: approval.Policy{FourEyes: true}, Signed: approvaltest.Sign(t, approvaltest.Statement(t, gate, "lgtm", time.Now()), mallory)})
		require.Error(t, aerr, "mallory started the rollout (with no proof) and approved it herself past four eyes: the starter is %s, from an INSERTed row", who.Name)
	}
	require.Error(t, err, "the reset run's start counted as %s's on an INSERTed row alone", who.Name)
}

// The attack above and ledger's bogus head together: mallory starts a
// four-eyes rollout with no proof and approves it herself, and `starter
// audit verify --allowed-signers --audit-public-key --against EARLIER`
// (every flag the docs recommend) calls the ledger intact. The owner
// INSERTs the forged OIDC start row and a head row with the worker's
// fingerprint and a garbage signature naming it; the worker, recording
// mallory's approval next, would sign after it (it reads that head as the
// row it signed last); the owner deletes the bogus head. The worker now
// refuses the forged start (its sealed token must open and verify as the
// row's), so no gate opens on it.
func TestAForgedStartAndASelfApprovalPassAuditVerify(t *testing.T) {
	env := testenv.New(t)
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	mallory := approvaltest.Key(t)
	signersFile := approvaltest.AllowedSigners(t, map[string]ssh.Signer{"mallory": mallory})
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: signersFile})
	require.NoError(t, err)
	acts := &activities.ApprovalActivities{Store: env.Store.WithHeadSigner(key), Keyring: keyring}
	ae := approvalEnv(acts)
	earlier := ledger.NewEarlierExport()
	require.NoError(t, env.Store.ExportAudit(t.Context(), earlier.Add))

	rollout, digest := "fleetsaga/rollout/plan/rt2-"+strings.ReplaceAll(t.Name(), "/", "-"), strings.Repeat("e8", 32)
	st := approvaltest.Statement(t, approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: rollout, PlanDigest: digest, Decision: approval.DecisionStart}, "start plan q3", time.Now())
	signed := approval.Signed{Payload: string(st.Payload()), SealedIDToken: "AAAA"}
	start := func() (approval.Principal, error) {
		var p approval.Principal
		v, err := ae.ExecuteActivity(acts.VerifyStart, activities.VerifyStartInput{Rollout: rollout, RunID: "run-1", PlanDigest: digest, Signed: signed})
		if err == nil {
			require.NoError(t, v.Get(&p))
		}
		return p, err
	}
	_, err = start()
	require.Error(t, err)

	// The owner: the forged start row (a plain INSERT, the trigger hashes it) and a bogus head naming it.
	carol := "oidc:https://idp.example#carol"
	require.NoError(t, env.Store.RecordApproval(t.Context(), ledger.Approval{Rollout: rollout, Stage: "start:run-1", By: carol, Reason: st.Reason,
		PlanDigest: digest, Principal: carol, Method: "oidc", KeyFingerprint: "https://idp.example#carol", Payload: signed.Payload, ReplayKey: "idtoken:forged"}))
	sshPub, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	_, err = env.Store.DB().Exec(`INSERT INTO audit_head (tbl, chain, head_seq, head_hash, key_fingerprint, signature)
		SELECT 'rollout_approval', 'rollout ' || rollout_id, seq, hash, $2, 'AAAA' FROM rollout_approval WHERE rollout_id = $1`, rollout, ssh.FingerprintSHA256(sshPub))
	require.NoError(t, err)

	// The forged start row does not count: the reset run's start is
	// refused, so the rollout ends before its gate, with no starter.
	who, err := start() // the reset run
	require.Error(t, err, "the reset run's start counted as %s's on the INSERTed row", who.Name)
	gate := approval.Gate{TemporalNamespace: sdkTestNamespace, Rollout: rollout, Run: "run-1", Stage: "canary", PlanDigest: strings.Repeat("f9", 32), Decision: approval.DecisionApprove}
	_, err = approveWith(acts, activities.VerifyApprovalInput{Gate: gate, RunID: "run-1", Starter: who.Name, Policy: approval.Policy{FourEyes: true},
		Signed: approvaltest.Sign(t, approvaltest.Statement(t, gate, "lgtm", time.Now()), mallory)})
	require.Error(t, err, "four eyes with no verified starter refuses mallory's approval")
	// What follows is the ledger side (the bogus head is the ledger's to
	// refuse): the owner cleans up, and audit verify must not call a
	// ledger holding an unsigned start row intact.
	_, err = env.Store.DB().Exec(`ALTER TABLE audit_head DISABLE TRIGGER audit_head_no_change;
DELETE FROM audit_head WHERE signature = 'AAAA';
ALTER TABLE audit_head ENABLE TRIGGER audit_head_no_change;`)
	require.NoError(t, err)

	signers, err := os.ReadFile(signersFile)
	require.NoError(t, err)
	allowed, err := approval.ParseAllowedSigners(signers)
	require.NoError(t, err)
	v := &ledger.AuditVerifier{HeadKey: pub, Against: earlier, RequireSigned: true, CheckSignature: activities.CheckStoredApproval(allowed, nil)}
	require.NoError(t, env.Store.ExportAudit(t.Context(), v.Add))
	require.Error(t, v.Finish(), "a start nobody signed and the starter's own approval at a four-eyes gate: audit verify with every flag calls it intact (%d chains with heads, %d oidc rows)", v.HeadChains, v.OIDC)
}

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
