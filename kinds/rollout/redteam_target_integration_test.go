package rollout_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// The red team's relabelled plan, on the real stack: an SP firmware
// update shown to the approver as sp/sled/9 whose input flashes cubby 13.
// The rollout refuses the plan (PlanTargetMismatch) before its gate, an
// approval of whatever the gate shows would find none, and fleetsim's
// /truth shows cubby 13's SP on its old firmware with no delivery.
func TestRedTeamRelabelledPlanIsRefusedAndNoSPIsFlashed(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: PostgreSQL + Temporal + fleetsim")
	}
	st := newSPOnStack(t, 36, 13) // cubby 13 is this test's: other packages update the low cubbies on the same Temporal server
	env, sim, sp, raw := st.env, st.sim, st.sp, st.raw
	rollout.PinTestKind(t)
	env.StartWorker(workerapp.Deps{Fleet: env.Endpoints(sim)})

	const shown = "sp/sled/9"
	in := rollout.RolloutInput{Name: "relabel-" + strings.TrimPrefix(env.TaskQueue, "test-"), Stages: []rollout.Stage{{
		Name: "sp", Kind: workflows.KindSPFirmware, Concurrency: 1, Approval: true,
		Updates: []rollout.PlanUpdate{{Target: shown, Artifact: sp.ArtifactVersion(), Input: raw}},
	}}}
	id := rollout.RolloutWorkflowID(in.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		for _, w := range []string{id, workflows.WorkflowID(workflows.KindSPFirmware, shown), workflows.WorkflowID(workflows.KindSPFirmware, sp.Target())} {
			_ = env.Client.TerminateWorkflow(context.Background(), w, "", "test over")
		}
	})
	run, err := env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: env.TaskQueue}, rollout.Rollout, in)
	require.NoError(t, err)

	// The approver approves what the gate shows, should it show anything.
	ended := make(chan error, 1)
	go func() { ended <- run.Get(ctx, nil) }()
	var endErr error
	for waiting := true; waiting; {
		select {
		case endErr = <-ended:
			waiting = false
		case <-time.After(200 * time.Millisecond):
			if gate := gateNow(ctx, t, env, id); gate != nil {
				_, _ = env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
					Args:         []any{workflows.Approval{By: "alice", Reason: "reviewed " + shown, Stage: gate.Stage, PlanDigest: gate.Digest}},
					WaitForStage: client.WorkflowUpdateStageCompleted})
			}
		}
	}

	tr := spTruth(t, sim.URL, 13) // the device is the truth: asked first
	require.Equal(t, spec.GeneratedSPActive, tr.SP.Active.Version, "the SP was not flashed")
	require.Empty(t, tr.Deliveries, "no image was delivered to the SP")
	var app *temporal.ApplicationError
	require.True(t, errors.As(endErr, &app), "the rollout must be refused, got %v", endErr)
	require.Equal(t, failure.PlanTargetMismatch, app.Type())
	require.Contains(t, app.Message(), "shown as sp/sled/9, but its input acts on sp/sled/13")
}
