package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/testenv"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workerapp"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// approveTimeout bounds the rollout of two small agent stages on a
// two-server simulated fleet (seconds when healthy).
const approveTimeout = 3 * time.Minute

// starter approve approves only the plan whose full digest the operator
// names: without --plan-digest, or with a prefix of it, it exits 2,
// prints the gate's full digest and approves nothing (a 12-character
// prefix of another plan can be found in seconds); an approval for a plan
// the gate no longer shows — the previous gate's — exits 1 with one line
// saying what the gate shows now, and approves nothing.
func TestApproveBindsThePlanTheGateShows(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	env := testenv.New(t)
	s, err := spec.Generate(spec.GenerateOptions{Servers: 2, Seed: 11, SpeedUp: 30})
	require.NoError(t, err)
	sim := env.StartFleetsim(s)
	env.StartWorker(workerapp.Deps{Fleet: env.Endpoints(sim)})
	vars := []string{"TEMPORAL_ADDRESS=" + env.TemporalAddress(), "FLEETSAGA_TASK_QUEUE=" + env.TaskQueue}
	ctx, cancel := context.WithTimeout(context.Background(), approveTimeout)
	defer cancel()

	name := "approve-" + strings.TrimPrefix(env.TaskQueue, "test-")
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	require.NoError(t, os.WriteFile(plan, []byte(`name: `+name+`
stages:
- name: cmon
  kind: agent-install
  approval: true
  concurrency: 1
  updates:
  - agents: [{name: cmon-agent}]
    selection: {all: true}
    pollInterval: 250ms
- name: firewaller
  kind: agent-install
  approval: true
  concurrency: 1
  updates:
  - agents: [{name: firewaller}]
    selection: {all: true}
    pollInterval: 250ms
`), 0o644))
	id := rollout.RolloutWorkflowID(name)
	t.Cleanup(func() {
		for _, w := range []string{id, workflows.WorkflowID(workflows.KindAgentInstall, "dc/cmon-agent"), workflows.WorkflowID(workflows.KindAgentInstall, "dc/firewaller")} {
			_ = env.Client.TerminateWorkflow(context.Background(), w, "", "test over")
		}
	})
	r := runStarter(t, vars, "rollout", plan)
	require.Equal(t, exitOK, r.code, r.stderr)

	cmon := gateShows(ctx, t, env, id, "cmon")
	r = runStarter(t, vars, "approve", id, "--by", "alice", "--reason", "cmon plan reviewed")
	require.Equal(t, exitUsage, r.code, "no --plan-digest: nothing approved: %s", r.stderr)
	require.Contains(t, r.stderr, "--plan-digest is required: stage cmon's plan at the gate is "+cmon.Digest+";", "the full digest to review")
	r = runStarter(t, vars, "approve", id, "--by", "alice", "--reason", "cmon plan reviewed", "--plan-digest", cmon.Digest[:12])
	require.Equal(t, exitUsage, r.code, "a prefix can collide: %s", r.stderr)
	require.Contains(t, r.stderr, "want the plan's full digest")
	none, err := env.Store.Approvals(ctx, id)
	require.NoError(t, err)
	require.Empty(t, none, "the refused approvals recorded nothing")
	require.Equal(t, "cmon", gateShows(ctx, t, env, id, "cmon").Stage, "the gate is still closed")

	r = runStarter(t, vars, "approve", id, "--by", "alice", "--reason", "cmon plan reviewed", "--plan-digest", cmon.Digest)
	require.Equal(t, exitOK, r.code, "an approval of the plan the gate shows: %s", r.stderr)
	require.Contains(t, r.stderr, "stage cmon's plan at the gate: "+cmon.Digest)

	// bob reviewed the cmon plan; by the time he approves it, the rollout
	// waits at the next gate.
	fw := gateShows(ctx, t, env, id, "firewaller")
	r = runStarter(t, vars, "approve", id, "--by", "bob", "--reason", "cmon plan reviewed", "--plan-digest", cmon.Digest)
	require.Equal(t, exitFailed, r.code, r.stderr)
	require.Equal(t, "starter: "+id+": the approval is for plan "+cmon.Digest+", but the gate now shows stage firewaller with plan "+
		fw.Digest[:12]+": look at it again (starter status) and approve again", lastLine(r.stderr),
		"one line says why")

	r = runStarter(t, vars, "approve", id, "--by", "carol", "--reason", "firewaller plan reviewed", "--plan-digest", fw.Digest)
	require.Equal(t, exitOK, r.code, r.stderr)

	approvals, err := env.Store.Approvals(ctx, id)
	require.NoError(t, err)
	require.Len(t, approvals, 2, "bob's approval approved nothing")
	stage := func(a ledger.Approval) string { return activities.StoredApprovalGate(a).Stage }
	require.Equal(t, []string{"cmon alice " + cmon.Digest, "firewaller carol " + fw.Digest},
		[]string{stage(approvals[0]) + " " + approvals[0].By + " " + approvals[0].PlanDigest, stage(approvals[1]) + " " + approvals[1].By + " " + approvals[1].PlanDigest})
}

// gateShows waits until the rollout shows stage's plan at its gate.
func gateShows(ctx context.Context, t *testing.T, env *testenv.Env, id, stage string) rollout.StagePlan {
	t.Helper()
	var sp *rollout.StagePlan
	require.Eventually(t, func() bool {
		v, err := env.Client.QueryWorkflow(ctx, id, "", rollout.GatePlanQuery)
		return err == nil && v.Get(&sp) == nil && sp != nil && sp.Stage == stage
	}, approveTimeout, 200*time.Millisecond, "the rollout never showed stage %s's plan", stage)
	return *sp
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
