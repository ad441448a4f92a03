package rollout_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"golang.org/x/crypto/ssh"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/approval/approvaltest"
	fmgs "github.com/fleetsaga/fleetsaga/fleet/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// The red team's forged approval: a signed rollout of one SP waits at a
// gate that needs two approvers, and alice's signed approval is in. A
// database user with the worker's role INSERTs approvals under the
// gate's ledger key (one unsigned in bob's name, one claiming to be
// bob's SSH approval, with a statement and no signature, one copying an
// OIDC row's columns) and resets the rollout to its first workflow task.
// The reset run's gate counts only what verifies again against the
// keyring: it still needs one more approval, and fleetsim's /truth shows
// the SP on its old firmware with no delivery.
func TestRedTeamForgedApprovalRowsAndAResetDoNotOpenASignedGate(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: PostgreSQL + Temporal + fleetsim")
	}
	st := newSPOnStack(t, 35, 12) // cubby 12 is this test's: other packages update the low cubbies on the same Temporal server
	env, sim, sp, raw := st.env, st.sim, st.sp, st.raw
	keys := map[string]ssh.Signer{"alice": approvaltest.Key(t), "bob": approvaltest.Key(t), "carol": approvaltest.Key(t)}
	keyring, err := approval.LoadKeyring(approval.KeyringConfig{AllowedSigners: approvaltest.AllowedSigners(t, keys)})
	require.NoError(t, err)
	rollout.PinTestKind(t)
	env.StartWorker(workerapp.Deps{Fleet: env.Endpoints(sim), Keyring: keyring})

	in := rollout.RolloutInput{Name: "redteam-" + strings.TrimPrefix(env.TaskQueue, "test-"), Stages: []rollout.Stage{{
		Name: "sp", Kind: workflows.KindSPFirmware, Concurrency: 1, Approval: true, ApprovalPolicy: &approval.Policy{Approvers: 2},
		Updates: []rollout.PlanUpdate{{Target: sp.Target(), Artifact: sp.ArtifactVersion(), Input: raw}},
	}}}
	id := rollout.RolloutWorkflowID(in.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		for _, w := range []string{id, workflows.WorkflowID(workflows.KindSPFirmware, sp.Target())} {
			_ = env.Client.TerminateWorkflow(context.Background(), w, "", "test over")
		}
	})
	digest, err := in.StartDigest()
	require.NoError(t, err)
	start := approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, PlanDigest: digest, Decision: approval.DecisionStart}, "start", time.Now()), keys["carol"])
	signedIn := in
	signedIn.StartSignature = &start
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, rollout.Rollout, signedIn)
	require.NoError(t, err)

	gate := awaitGate(ctx, t, env, id, "sp")
	alices := approvaltest.Sign(t, approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, Run: gate.RunID, Stage: gate.Stage, PlanDigest: gate.Digest, Decision: approval.DecisionApprove},
		"reviewed", time.Now()), keys["alice"])
	h, err := env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
		Args:         []any{workflows.Approval{By: "alice", Reason: "reviewed", Stage: gate.Stage, PlanDigest: gate.Digest, Signed: &alices}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(ctx, nil))
	const needsOneMore = "1 more approval, not by ssh:alice"
	require.Equal(t, needsOneMore, gateNow(ctx, t, env, id).StillNeeded)

	// The attack, with the worker's database role.
	key := gate.Stage + "@run:" + run.GetRunID()
	forged := string(approvaltest.Statement(t, approval.Gate{TemporalNamespace: env.Namespace, Rollout: id, Run: gate.RunID, Stage: gate.Stage, PlanDigest: gate.Digest, Decision: approval.DecisionApprove},
		"trust me", time.Now()).Payload())
	for _, sql := range []string{
		`INSERT INTO rollout_approval (rollout_id, stage, approved_by, reason, plan_digest, method) VALUES ($1, $2, 'bob', 'ok', $3, 'unsigned')`,
		`INSERT INTO rollout_approval (rollout_id, stage, approved_by, reason, plan_digest, principal, method, key_fingerprint, payload, replay_key)
			VALUES ($1, $2, 'ssh:bob', 'ok', $3, 'ssh:bob', 'ssh', '` + ssh.FingerprintSHA256(keys["bob"].PublicKey()) + `', $4, 'forged-1')`,
		`INSERT INTO rollout_approval (rollout_id, stage, approved_by, reason, plan_digest, principal, method, payload, replay_key)
			VALUES ($1, $2, 'oidc:https://idp#dana', 'ok', $3, 'oidc:https://idp#dana', 'oidc', $4, 'idtoken:forged')`,
	} {
		args := []any{id, key, gate.Digest}
		if strings.Contains(sql, "$4") {
			args = append(args, forged)
		}
		_, err := env.Store.DB().ExecContext(ctx, sql, args...)
		require.NoError(t, err, "the worker's role may INSERT")
	}
	reset := testenv.ResetWorkflow(t, env.Client, id, testenv.ResetFirst)

	// Wait for the reset run to decide: its gate shows what it needs, or
	// the SP's update has started (the gate opened).
	var after *rollout.StagePlan
	spStarted := func() bool {
		_, err := env.Client.DescribeWorkflowExecution(ctx, workflows.WorkflowID(workflows.KindSPFirmware, sp.Target()), "")
		return err == nil
	}
	require.Eventually(t, func() bool {
		if spStarted() {
			return true
		}
		d, err := env.Client.DescribeWorkflowExecution(ctx, id, "")
		if err != nil || d.GetWorkflowExecutionInfo().GetExecution().GetRunId() != reset.GetRunID() {
			return false
		}
		after = gateNow(ctx, t, env, id)
		return after != nil && after.StillNeeded != ""
	}, 60*time.Second, 100*time.Millisecond, "the reset run neither showed its gate nor started the SP's update")
	require.False(t, spStarted(), "the forged rows opened the gate: the SP's update started")
	require.Equal(t, "sp", after.Stage)
	require.Equal(t, needsOneMore, after.StillNeeded, "the forged rows count for nothing; alice's signed approval still counts")

	tr := spTruth(t, sim.URL, 12)
	require.Equal(t, spec.GeneratedSPActive, tr.SP.Active.Version, "the SP was not flashed")
	require.Empty(t, tr.Deliveries, "no image was delivered to the SP")
}

// spOnStack is one sled SP of a fleetsim rack on the real stack, and its
// update to an SP image 1.1.0 written for the test; the test starts its
// own worker.
type spOnStack struct {
	env *testenv.Env
	sim *fleetsim.Server
	sp  mgsupdate.SPFirmwareInput
	raw json.RawMessage
}

func newSPOnStack(t *testing.T, seed int64, cubby uint16) spOnStack {
	t.Helper()
	s := &spec.Spec{Seed: seed, SpeedUp: 100, Timings: spec.DefaultTimings()}
	s.Racks = spec.GenerateRacks(16, seed)
	require.NoError(t, s.Validate())
	env := testenv.New(t)
	sim := env.StartFleetsim(s)
	img := filepath.Join(t.TempDir(), "sp-1.1.0.bin")
	sum, err := simmgs.WriteImageFile(img, simmgs.ImageHeader{Component: simmgs.CompSP, Version: "1.1.0"}, 256<<10)
	require.NoError(t, err)
	sp := mgsupdate.SPFirmwareInput{
		SP:       mgsupdate.SPTarget{Type: fmgs.SpTypeSled, Slot: cubby, Serial: s.Racks[0].Sleds[cubby].Serial, Part: spec.GeneratedPart},
		Artifact: mgsupdate.Artifact{Version: "1.1.0", SHA256: sum, Path: img},
		Timing:   mgsupdate.MGSTiming{PollInterval: 50 * time.Millisecond, AttemptDelay: 100 * time.Millisecond, MaxAttempts: 2},
	}
	raw, err := json.Marshal(sp)
	require.NoError(t, err)
	return spOnStack{env: env, sim: sim, sp: sp, raw: raw}
}

// spTruth is one sled SP of rack 0 as fleetsim's /truth shows it.
func spTruth(t *testing.T, simURL string, cubby int) simmgs.SPTruth {
	t.Helper()
	resp, err := http.Get(simURL + "/truth")
	require.NoError(t, err)
	defer resp.Body.Close()
	var truth map[string]json.RawMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&truth))
	var mgs simmgs.Truth
	require.NoError(t, json.Unmarshal(truth[simmgs.Name], &mgs))
	for _, sp := range mgs.Racks[0].SPs {
		if sp.Type == "sled" && sp.Slot == cubby {
			return sp
		}
	}
	t.Fatalf("no sled SP %d in /truth", cubby)
	return simmgs.SPTruth{}
}
