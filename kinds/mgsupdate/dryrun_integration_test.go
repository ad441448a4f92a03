package mgsupdate_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/activities"
	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/internal/replay"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/kinds/bootimage"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// dryRunFleet is an MGS rack plus a datacenter and a cluster with a
// MachineSet per skip reason, so a dry run meets every case fleetsim has.
// The other owners are off: the test proves the dry run changes nothing,
// which a Nexus executor or an MCO writing meanwhile would blur, and the
// MachineSets are fleetsaga's to patch (direct mode; the owners' own rows
// are TestSPFirmwareRefusesADeviceNexusIsUpdating's and the MCO test's).
func dryRunFleet(s *spec.Spec) {
	s.Datacenter = spec.GenerateDatacenter(4, 5)
	for i := range s.Racks {
		s.Racks[i].Owners = spec.NoOwners()
	}
	upgrading := spec.SampleCluster("c2", spec.PlatformGCP, false)
	upgrading.Upgrading, upgrading.UpgradeCompletesAfter = true, spec.Duration{Duration: 24 * time.Hour}
	c1 := spec.SampleCluster("c1", spec.PlatformAWS, true)
	c1.MCO, upgrading.MCO = spec.Off(), spec.Off()
	s.Clusters = []spec.Cluster{c1, upgrading}
}

// A dry run touches nothing: fleetsim's truth and every ledger table are
// the same before and after. Its rows name every action and the reasons
// fleetsim can produce.
func TestDryRunChangesNothingAndNamesEveryActionAndReason(t *testing.T) {
	st := newMGSStack(t, dryRunFleet)
	srv := st.spec.Datacenter.Servers
	st.arm(faults.Fault{Kind: faults.ServerOffline, Target: "server/" + srv[2].UUID.String()})
	nexus, other := nexusZone(t, st.spec)

	sp := func(cubby int, version string, mutate func(*mgsupdate.SPFirmwareInput)) rollout.PlanUpdate {
		in := st.spInput(cubby, version)
		if mutate != nil {
			mutate(&in)
		}
		return planUpdateOf(t, &in)
	}
	plan := rollout.RolloutInput{Name: "dry", Stages: []rollout.Stage{
		{Name: "sp", Kind: workflows.KindSPFirmware, Concurrency: 2, Exclusive: [][]string{{"sp/sled/0", "sp/sled/1"}}, Updates: []rollout.PlanUpdate{
			sp(0, "1.1.0", nil),
			sp(1, spec.GeneratedSPActive, nil),
			sp(2, "1.1.0", func(in *mgsupdate.SPFirmwareInput) { in.SP.Serial = "BRM-NOT-THIS-ONE" }),
			sp(3, "0.5.0", nil),
		}},
		{Name: "sp-expected", Kind: workflows.KindSPFirmware, Concurrency: 1, Updates: []rollout.PlanUpdate{
			sp(3, "1.1.0", func(in *mgsupdate.SPFirmwareInput) { in.ExpectedActive = "0.8.0" }),
		}},
		{Name: "agents", Kind: workflows.KindAgentInstall, Concurrency: 1, Updates: []rollout.PlanUpdate{
			planUpdateOf(t, &agents.AgentInstallInput{AllAgents: true, Selection: agents.ServerSelection{All: true},
				ExcludeServers: []string{srv[1].Hostname}, ExcludeAgents: []string{"amon-agent"}}),
			planUpdateOf(t, &agents.AgentInstallInput{Agents: []agents.AgentRequest{{Name: "vm-agent"}},
				Selection: agents.ServerSelection{Servers: []string{"no-such-server"}}}),
		}},
		{Name: "zones", Kind: workflows.KindZoneExpunge, Concurrency: 1, Updates: []rollout.PlanUpdate{
			planUpdateOf(t, &zoneexpunge.ZoneExpungeInput{Sled: nexus.sled, Zone: nexus.zone}),
			planUpdateOf(t, &zoneexpunge.ZoneExpungeInput{Sled: other.sled, Zone: uuid.New()}),
		}},
		{Name: "boot-images", Kind: workflows.KindBootImageBump, Concurrency: 1, Updates: []rollout.PlanUpdate{
			planUpdateOf(t, &bootimage.BootImageBumpInput{Cluster: "c1"}),
			planUpdateOf(t, &bootimage.BootImageBumpInput{Cluster: "c2"}),
		}},
		{Name: "drift", Kind: workflows.KindAgentDrift, Concurrency: 1, Updates: []rollout.PlanUpdate{
			planUpdateOf(t, &agents.AgentDriftInput{Agents: []string{"vm-agent"}, Selection: agents.ServerSelection{All: true}}),
		}},
	}}

	truthBefore, ledgerBefore := st.simTruth(), ledgerTables(t, st.env.DatabaseURL)
	res := runDryRun(t, st, plan)
	assertSame(t, truthBefore, st.simTruth(), "a dry run changes nothing in the fleet")
	assert.Equal(t, ledgerBefore, ledgerTables(t, st.env.DatabaseURL), "a dry run writes nothing to the ledger")

	for _, r := range res.Rows() {
		t.Logf("%-12s %-45s %-40s %-22s %-22s %-18s %s", r.Stage, r.Target, r.Device, r.Current, r.Desired, r.Action, r.Reason)
	}
	want := []struct {
		stage, target, device string
		action                activities.PlanAction
		reason                string
	}{
		{"sp", "sp/sled/0", "", activities.PlanUpdate, ""},
		{"sp", "sp/sled/1", "", activities.PlanAtTarget, ""},
		{"sp", "sp/sled/2", "", activities.PlanRefuse, failure.WrongDevice},
		{"sp", "sp/sled/3", "", activities.PlanRefuse, failure.WouldDowngrade},
		{"sp-expected", "sp/sled/3", "", activities.PlanRefuse, failure.WrongActiveVersion},
		{"agents", "", srv[0].Hostname + " vm-agent", activities.PlanUpdate, ""},
		{"agents", "", srv[1].Hostname, activities.PlanSkip, "excluded server"},
		{"agents", "", srv[2].Hostname, activities.PlanSkip, "offline"},
		{"agents", "", "amon-agent", activities.PlanSkip, "excluded agent"},
		{"agents", "", "marlin", activities.PlanSkip, "only installed when named"},
		{"agents", "", "(request)", activities.PlanRefuse, failure.InvalidAgentRequest},
		{"zones", "zone/" + nexus.zone.String(), "", activities.PlanUpdate, "Nexus"},
		{"zones", "", "", activities.PlanRefuse, failure.ZoneNotFound},
		{"boot-images", "", "machineset/c1-worker-a", activities.PlanUpdate, ""},
		{"boot-images", "", "machineset/c1-current", activities.PlanAtTarget, ""},
		{"boot-images", "", "machineset/c1-custom", activities.PlanSkip, "CustomImage"},
		{"boot-images", "", "machineset/c1-owned", activities.PlanSkip, "OwnedByAnotherController"},
		{"boot-images", "", "machineset/c1-windows", activities.PlanSkip, "WindowsTemplate"},
		{"boot-images", "cluster/c2", "(cluster)", activities.PlanRefuse, "target busy: cluster is installing or upgrading"},
		{"drift", "", "", activities.PlanAtTarget, "no drift"},
	}
	for _, w := range want {
		found := false
		for _, r := range res.Rows() {
			if r.Stage == w.stage && (w.target == "" || r.Target == w.target) && (w.device == "" || r.Device == w.device) &&
				r.Action == w.action && strings.Contains(r.Reason, w.reason) {
				found = true
			}
		}
		assert.True(t, found, "no row %+v", w)
	}
	assert.Equal(t, []int{1, 2}, []int{res.Stages[0].Rows[0].Order, res.Stages[0].Rows[1].Order}, "start order")
	assert.Equal(t, "sp/sled/0|sp/sled/1", res.Stages[0].Rows[0].Group)
	assert.Positive(t, res.Changes)
	assert.Positive(t, res.Refused)
	assert.Equal(t, 26*time.Second, res.Stages[0].Estimate, "one SP to update at concurrency 2")
}

// assertSame compares two long texts and shows where they first differ.
func assertSame(t *testing.T, want, got, msg string) {
	t.Helper()
	if want == got {
		return
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	from := max(i-300, 0)
	t.Errorf("%s: differs at byte %d:\nbefore: …%s…\nafter:  …%s…", msg, i, want[from:min(i+200, len(want))], got[from:min(i+200, len(got))])
}

type zoneRef struct{ sled, zone uuid.UUID }

// nexusZone finds a Nexus zone and another sled of the spec's first rack.
func nexusZone(t *testing.T, s *spec.Spec) (nexus, other zoneRef) {
	t.Helper()
	for _, sl := range s.Racks[0].Sleds {
		for _, z := range sl.Zones {
			if z.Kind == spec.ZoneKindNexus && nexus.zone == uuid.Nil {
				nexus = zoneRef{sl.ID, z.ID}
			}
		}
		if other.sled == uuid.Nil || other.sled == nexus.sled {
			other = zoneRef{sled: sl.ID}
		}
	}
	require.NotEqual(t, uuid.Nil, nexus.zone, "the rack has a Nexus zone")
	return nexus, other
}

// planUpdateOf is a plan entry for in.
func planUpdateOf(t *testing.T, in workflows.UpdateInput) rollout.PlanUpdate {
	t.Helper()
	raw, err := json.Marshal(in)
	require.NoError(t, err)
	return rollout.PlanUpdate{Target: in.Target(), Artifact: in.ArtifactVersion(), Input: raw}
}

func runDryRun(t *testing.T, st *mgsStack, plan rollout.RolloutInput) rollout.PlanResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := st.env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: rollout.DryRunWorkflowID("plan/"+plan.Name, uuid.NewString()), TaskQueue: st.env.TaskQueue,
	}, rollout.DryRun, plan)
	require.NoError(t, err)
	var res rollout.PlanResult
	require.NoError(t, run.Get(ctx, &res))
	return res
}

// simTruth is fleetsim's truth as JSON, without the simulated Nexus
// instances' saga counters (they create and claim sagas on their own
// clock; whether each runs is kept).
func (st *mgsStack) simTruth() string {
	st.t.Helper()
	resp, err := http.Get(st.sim.URL + "/truth")
	require.NoError(st.t, err)
	defer resp.Body.Close()
	var truth map[string]any
	require.NoError(st.t, json.NewDecoder(resp.Body).Decode(&truth))
	if sled, ok := truth["sled"].(map[string]any); ok {
		nexus, _ := sled["nexus"].([]any)
		for i, n := range nexus {
			n := n.(map[string]any)
			nexus[i] = map[string]any{"zone_id": n["zone_id"], "sled_id": n["sled_id"], "running": n["running"]}
		}
	}
	b, err := json.Marshal(truth)
	require.NoError(st.t, err)
	return string(b)
}

// ledgerTables is every ledger table's rows as JSON, by table.
func ledgerTables(t *testing.T, url string) map[string]string {
	t.Helper()
	db, err := sql.Open("postgres", url)
	require.NoError(t, err)
	defer db.Close()
	out := map[string]string{}
	for _, table := range []string{"update_attempt", "update_event", "zone_disposition", "zone_saga_reassignment", "agent_rollout_server", "rollout_approval", "bootimage_change"} {
		var rows sql.NullString
		require.NoError(t, db.QueryRow(fmt.Sprintf(`SELECT json_agg(t ORDER BY t::text)::text FROM %s t`, table)).Scan(&rows))
		out[table] = rows.String
	}
	return out
}

// An approved plan that drifted before the stage ran: the target whose
// state moved since the gate's plan is refused (PlanDrift, with what was
// planned and what was found) and never touched; the rest run. The
// ledger's approval carries the plan's digest. With
// FLEETSAGA_RECORD_HISTORIES=1 the history is saved for the replay test.
func TestApprovedPlanThatDriftedRefusesTheDriftedTargetAndRunsTheRest(t *testing.T) {
	st := newMGSStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	plan := rollout.RolloutInput{Name: "drift", Stages: []rollout.Stage{{
		Name: "sp", Kind: workflows.KindSPFirmware, Concurrency: 2, Approval: true,
		Updates: []rollout.PlanUpdate{planUpdateOf(t, st.spInput(0, "1.1.0")), planUpdateOf(t, st.spInput(2, "1.1.0"))},
	}}}
	id := rollout.RolloutWorkflowID(plan.Name) + "#" + uuid.NewString()[:8]
	run, err := st.env.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: st.env.TaskQueue}, rollout.Rollout, plan)
	require.NoError(t, err)

	var gate *rollout.StagePlan
	require.Eventually(t, func() bool {
		v, err := st.env.Client.QueryWorkflow(ctx, id, "", rollout.GatePlanQuery)
		return err == nil && v.Get(&gate) == nil && gate != nil
	}, time.Minute, 200*time.Millisecond)
	require.Len(t, gate.Rows, 2)
	for _, r := range gate.Rows {
		assert.Equal(t, activities.PlanUpdate, r.Action, r.Target)
		assert.Equal(t, spec.GeneratedSPActive+" → 1.1.0", r.Current+" → "+r.Desired)
	}

	// Someone moves sled 2 on while the gate waits.
	other := st.startWF(workflows.KindSPFirmware, st.spInput(2, "1.2.0"), mgsupdate.SPFirmwareUpdate)
	_, err = st.result(other)
	require.NoError(t, err)

	stale := workflows.Approval{By: "alice", Reason: "plan reviewed", PlanDigest: "0123456789ab"}
	h, err := st.env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
		Args: []any{stale}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.ErrorContains(t, h.Get(ctx, nil), "the approval is for plan 0123456789ab", "an approval for another plan is refused")
	h, err = st.env.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.ApproveUpdate,
		Args:         []any{workflows.Approval{By: "alice", Reason: "plan reviewed", PlanDigest: gate.Digest[:12]}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(ctx, nil))

	var res rollout.RolloutResult
	require.NoError(t, run.Get(ctx, &res))
	require.Len(t, res.Outcomes, 2)
	byTarget := map[string]rollout.UpdateOutcome{}
	for _, o := range res.Outcomes {
		byTarget[o.Target] = o
	}
	assert.Equal(t, workflows.StateCompleted, byTarget["sp/sled/0"].State)
	drifted := byTarget["sp/sled/2"]
	assert.Equal(t, rollout.StateRefused, drifted.State)
	assert.Equal(t, rollout.OutcomePlanDrift, drifted.Outcome)
	assert.Equal(t, "planned 1.0.0 → 1.1.0, found 1.2.0", drifted.Error)
	assert.Equal(t, 1, res.Refused)

	assert.Equal(t, "1.1.0", st.truth(0).SP.Active.Version)
	assert.Equal(t, "1.2.0", st.truth(2).SP.Active.Version, "the drifted SP is left as found")
	assert.Len(t, completed(st.truth(2).Deliveries), 1, "only the out-of-band update was delivered to sled 2")
	approvals, err := st.env.Store.Approvals(ctx, id)
	require.NoError(t, err)
	require.Len(t, approvals, 1)
	assert.Equal(t, gate.Digest, approvals[0].PlanDigest)

	replay.Record(t, st.env.Client, id, run.GetRunID(), "../testdata/histories/rollout-approval-plan-drift.json")
}
