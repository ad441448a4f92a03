package rollout

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// testArtifact is the test kind's image: a label and the bytes' hash.
type testArtifact struct {
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
}

// Artifacts implements workflows.Delivers for the test kind.
func (t *testInput) Artifacts() []workflows.ArtifactDigest {
	if t.Artifact == nil {
		return nil
	}
	return []workflows.ArtifactDigest{{Name: "image", Version: t.Artifact.Version, SHA256: t.Artifact.SHA256}}
}

func sumOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// relabelled is the red team's plan: the update is shown as test/nine,
// its input makes the child act on test/one.
func relabelled(t *testing.T, gated bool) RolloutInput {
	one, err := json.Marshal(testInput{Name: "one"})
	require.NoError(t, err)
	return RolloutInput{Name: "relabelled", Stages: []Stage{{Name: "flash", Kind: kindTest, Concurrency: 1, Approval: gated,
		Updates: []PlanUpdate{{Target: "test/nine", Input: one}}}}}
}

// verifyEveryApproval makes the worker's check accept every approval.
func verifyEveryApproval(env *testsuite.TestWorkflowEnvironment) {
	var aa *activities.ApprovalActivities
	env.OnActivity(aa.VerifyApproval, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.VerifyApprovalInput) (activities.VerifyApprovalResult, error) {
			return activities.VerifyApprovalResult{Principal: approval.Principal{Name: in.By}}, nil
		})
}

// approveAt sends an approval at the gate after d; refused collects the
// refusals by id.
func approveAt(env *testsuite.TestWorkflowEnvironment, d time.Duration, id string, ap func() (workflows.Approval, bool), refused map[string]string) {
	env.RegisterDelayedCallback(func() {
		a, ok := ap()
		if !ok {
			return
		}
		env.UpdateWorkflow(workflows.ApproveUpdate, id, &testsuite.TestUpdateCallback{
			OnReject: func(err error) { refused[id] = err.Error() }, OnAccept: func() {}, OnComplete: func(any, error) {},
		}, a)
	}, d)
}

// shownPlan is the plan at the gate now (nil: none).
func shownPlan(t *testing.T, env *testsuite.TestWorkflowEnvironment) *StagePlan {
	v, err := env.QueryWorkflow(GatePlanQuery)
	require.NoError(t, err)
	var sp *StagePlan
	require.NoError(t, v.Get(&sp))
	return sp
}

// The approver must never be shown one target while the child acts on
// another: a rollout whose update is shown as test/nine while its input
// acts on test/one is refused, typed, before its gate, and nothing ran.
func TestRolloutRefusesAnUpdateWhoseShownTargetIsNotTheOneItsInputActsOn(t *testing.T) {
	env := newRolloutEnv(t)
	verifyEveryApproval(env)
	var shown []string
	approveAt(env, time.Hour, "alice", func() (workflows.Approval, bool) {
		sp := shownPlan(t, env)
		if sp == nil {
			return workflows.Approval{}, false
		}
		for _, r := range sp.Rows {
			shown = append(shown, r.Target)
		}
		return workflows.Approval{By: "alice", Reason: "reviewed test/nine", Stage: sp.Stage, PlanDigest: sp.Digest}, true
	}, map[string]string{})
	env.ExecuteWorkflow(Rollout, relabelled(t, true))

	err := env.GetWorkflowError()
	require.Error(t, err, "the approver was shown %v and the child acted on test/one (ran: %v)", shown, spans)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, failure.PlanTargetMismatch, app.Type())
	require.Contains(t, app.Message(), "test/nine")
	require.Contains(t, app.Message(), "test/one")
	require.Empty(t, spans, "nothing ran")
	require.Empty(t, shown, "no plan was shown for approval")
}

// The dry run refuses the same plan with the same type: what starter plan
// shows can never name another target than the one the update acts on.
func TestDryRunRefusesAnUpdateWhoseShownTargetIsNotTheOneItsInputActsOn(t *testing.T) {
	env := newRolloutEnv(t)
	env.RegisterWorkflow(DryRun)
	var ra *RolloutActivities
	env.OnActivity(ra.MeasuredDeviceTimes, mock.Anything, mock.Anything).Return(map[string]ledger.Measured{}, nil)
	env.ExecuteWorkflow(DryRun, relabelled(t, false))

	var app *temporal.ApplicationError
	require.ErrorAs(t, env.GetWorkflowError(), &app)
	require.Equal(t, failure.PlanTargetMismatch, app.Type())
}

// signedFor is a plan with one update of an image labelled 1.1.0 whose
// bytes hash to sum.
func signedFor(sum string) RolloutInput {
	return RolloutInput{Name: "bytes", Stages: []Stage{{Name: "flash", Kind: kindTest, Concurrency: 1, Approval: true,
		Updates: updates(testInput{Name: "a", Take: time.Minute, Artifact: &testArtifact{Version: "1.1.0", SHA256: sum}})}}}
}

// dryRunDigest is the digest the dry run shows for in's first stage.
func dryRunDigest(t *testing.T, in RolloutInput) string {
	t.Helper()
	env := newRolloutEnv(t)
	env.RegisterWorkflow(DryRun)
	var ra *RolloutActivities
	env.OnActivity(ra.MeasuredDeviceTimes, mock.Anything, mock.Anything).Return(map[string]ledger.Measured{}, nil)
	env.ExecuteWorkflow(DryRun, in)
	require.NoError(t, env.GetWorkflowError())
	var res PlanResult
	require.NoError(t, env.GetWorkflowResult(&res))
	return res.Stages[0].Digest
}

// A digest binds what the stage will do, not only the labels it shows:
// the same targets and versions with other image bytes, another
// concurrency, failure budget, approval policy, health gate, threshold or
// ramp make another digest.
func TestPlanDigestChangesWithTheBytesAndSafetySettingsUnderTheSameLabels(t *testing.T) {
	reviewed := dryRunDigest(t, signedFor(sumOf("good image")))
	changes := map[string]func(*Stage){
		"artifact bytes": func(st *Stage) {
			st.Updates = updates(testInput{Name: "a", Take: time.Minute, Artifact: &testArtifact{Version: "1.1.0", SHA256: sumOf("bad image")}})
		},
		"input beyond the labels": func(st *Stage) {
			st.Updates = updates(testInput{Name: "a", Take: time.Hour, Artifact: &testArtifact{Version: "1.1.0", SHA256: sumOf("good image")}})
		},
		"concurrency":     func(st *Stage) { st.Concurrency = 2 },
		"failure budget":  func(st *Stage) { st.FailureBudget = 5 },
		"approval policy": func(st *Stage) { st.ApprovalPolicy = &approval.Policy{Approvers: 2} },
		"threshold":       func(st *Stage) { st.Thresholds = []Threshold{{Class: ClassAny, Percent: 50, Minimum: 1}} },
		"ramp":            func(st *Stage) { st.Concurrency, st.Ramp = 1, &Ramp{Start: 1, Factor: 2} },
		"health gate": func(st *Stage) {
			st.Health = &HealthGate{Bake: time.Minute, Checks: []HealthCheck{{Name: "api", URL: "http://health.example/"}}}
		},
	}
	for name, change := range changes {
		in := signedFor(sumOf("good image"))
		change(&in.Stages[0])
		require.NoError(t, in.Validate(), name)
		require.NotEqual(t, reviewed, dryRunDigest(t, in), "%s changed under the same labels: the digest must change", name)
	}
	require.Equal(t, reviewed, dryRunDigest(t, signedFor(sumOf("good image"))), "the same plan, the same digest")
}

// The attacker's swap: an approval signed for the plan the approver
// reviewed (the good image) is sent to a rollout of the same labels with
// other bytes. It is refused and the gate stays shut; only an approval of
// the plan the gate shows opens it.
func TestApprovalOfTheReviewedBytesDoesNotOpenTheGateOfOtherBytes(t *testing.T) {
	reviewed := dryRunDigest(t, signedFor(sumOf("good image")))
	env := newRolloutEnv(t)
	verifyEveryApproval(env)
	refused := map[string]string{}
	approveAt(env, time.Hour, "alice, reviewed plan", func() (workflows.Approval, bool) {
		return workflows.Approval{By: "alice", Reason: "reviewed the good image", Stage: "flash", PlanDigest: reviewed}, true
	}, refused)
	var shown *StagePlan
	approveAt(env, 2*time.Hour, "bob, shown plan", func() (workflows.Approval, bool) {
		shown = shownPlan(t, env)
		return workflows.Approval{By: "bob", Reason: "reviewed what the gate shows", Stage: shown.Stage, PlanDigest: shown.Digest}, true
	}, refused)
	began := env.Now()
	env.ExecuteWorkflow(Rollout, signedFor(sumOf("bad image")))
	require.NoError(t, env.GetWorkflowError())

	require.Contains(t, refused, "alice, reviewed plan", "an approval of the good image's plan opened the gate of the bad image's")
	require.Contains(t, refused["alice, reviewed plan"], "the approval is for plan")
	require.NotContains(t, refused, "bob, shown plan")
	require.NotEqual(t, reviewed, shown.Digest)
	require.Equal(t, sumOf("bad image"), shown.Binding.Updates[0].Artifacts[0].SHA256, "the gate shows the bytes it binds")
	require.Contains(t, strings.Join(shown.BoundLines(), "\n"), sumOf("bad image"))
	require.Len(t, spans, 1)
	require.False(t, spans[0].start.Before(began.Add(2*time.Hour)), "the stage started before the approval of the plan it shows")
}

// A run started before the digest bound the inputs (no marker in its
// history) keeps the digest its gate showed: the approval its approver
// signed for it still opens the gate after the worker moves to this build.
func TestARunStartedBeforeTheBindingKeepsItsDigest(t *testing.T) {
	env := newRolloutEnv(t)
	verifyEveryApproval(env)
	env.OnGetVersion(boundDigestVersion, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	in := signedFor(sumOf("good image"))
	var shown *StagePlan
	approveAt(env, time.Hour, "alice", func() (workflows.Approval, bool) {
		shown = shownPlan(t, env)
		return workflows.Approval{By: "alice", Reason: "reviewed", Stage: shown.Stage, PlanDigest: shown.Digest}, true
	}, map[string]string{})
	env.ExecuteWorkflow(Rollout, in)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, planDigest(shown.Rows), shown.Digest, "the digest the run showed before the change")
	require.Nil(t, shown.Binding, "an old run shows no binding it does not enforce")
	require.Len(t, spans, 1)
}
