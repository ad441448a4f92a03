package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim/dc"
	simmachine "github.com/fleetsaga/fleetsaga/fleetsim/machineapi"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/sled"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// The invariants are only worth their zeros if they catch what they name:
// each mutation below breaks one property of an otherwise clean run and
// must be reported by (at least) that invariant, and the clean run by none.

var (
	tSled     = uuid.MustParse("11111111-0000-4000-8000-000000000001")
	tZone     = uuid.MustParse("22222222-0000-4000-8000-000000000001")
	tNexusOld = uuid.MustParse("33333333-0000-4000-8000-000000000001")
	tNexusNew = uuid.MustParse("33333333-0000-4000-8000-000000000002")
	tServer   = uuid.MustParse("44444444-0000-4000-8000-000000000001")
	tInst     = uuid.MustParse("55555555-0000-4000-8000-000000000001")
	tOldImg   = uuid.MustParse("66666666-0000-4000-8000-000000000001")
	tNewImg   = uuid.MustParse("66666666-0000-4000-8000-000000000002")
	tAttempt  = uuid.MustParse("77777777-0000-4000-8000-000000000001")
	tSaga     = uuid.MustParse("88888888-0000-4000-8000-000000000001")
)

func spTruth(active string, deliveries ...simmgs.Delivery) simmgs.SPTruth {
	sp := simmgs.SPTruth{Type: "sled", Slot: 3, Updates: map[string]map[string]any{"sp": {"state": "none"}}, Deliveries: deliveries}
	sp.SP.Active = simmgs.SlotTruth{Valid: true, Version: active}
	sp.Host = simmgs.HostTruth{State: simmgs.HostRunning, Slots: [2]simmgs.SlotTruth{{Version: "1.0.0"}, {Version: "0.9.0"}}}
	return sp
}

func delivery(id uuid.UUID, start time.Time, d time.Duration) simmgs.Delivery {
	end := start.Add(d)
	return simmgs.Delivery{UpdateID: id, Component: "sp", Outcome: "complete", StartedAt: start, EndedAt: &end}
}

func cleanEvidence() *evidence {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	stopped := t0.Add(10 * time.Second)
	adopted := t0.Add(11 * time.Second)
	cluster := spec.SampleCluster("c0", spec.PlatformAWS, true)
	machines := func(img string, replicas int64) map[string]simmachine.MachineSetTruth {
		m := map[string]simmachine.MachineSetTruth{}
		for _, ms := range cluster.MachineSets {
			m[ms.Name] = simmachine.MachineSetTruth{Image: img, Replicas: replicas}
		}
		return m
	}
	agentsAt := func(img uuid.UUID) []triton.Agent {
		return []triton.Agent{{Name: "vm-agent", ImageUUID: img, UUID: tInst}}
	}
	before := &truth{
		MGS:     simmgs.Truth{Racks: []simmgs.RackTruth{{SPs: []simmgs.SPTruth{spTruth("1.0.0")}}}},
		Sled:    sled.Truth{Sleds: []sled.SledTruth{{ID: tSled, Zones: []sled.ZoneTruth{{ID: tZone, Kind: "nexus"}}}}},
		DC:      dc.Truth{Servers: []dc.ServerTruth{{UUID: tServer, Agents: agentsAt(tOldImg), Record: agentsAt(tOldImg), Instances: []dc.InstanceTruth{{UUID: tInst, Service: "vm-agent", ImageUUID: tOldImg}}}}},
		Machine: simmachine.Truth{Clusters: map[string]simmachine.ClusterTruth{"c0": {MachineSets: machines("ami-old", 1)}}},
	}
	after := &truth{
		MGS:  simmgs.Truth{Racks: []simmgs.RackTruth{{SPs: []simmgs.SPTruth{spTruth(spTargetVersion, delivery(tAttempt, t0, time.Second))}}}},
		Sled: sled.Truth{Sleds: []sled.SledTruth{{ID: tSled}}, Nexus: []sled.NexusTruth{{ZoneID: tNexusOld, StoppedAt: &stopped, SagasCreated: 1}, {ZoneID: tNexusNew, Running: true}}},
		DC: dc.Truth{Servers: []dc.ServerTruth{{UUID: tServer, Agents: agentsAt(tNewImg), Record: agentsAt(tNewImg), Instances: []dc.InstanceTruth{{UUID: tInst, Service: "vm-agent", ImageUUID: tNewImg}}}},
			Installs: []dc.InstallRecord{{ServerUUID: tServer, ImageUUID: tNewImg, Outcome: "complete"}}},
		Machine: simmachine.Truth{Clusters: map[string]simmachine.ClusterTruth{"c0": {MachineSets: machines("ami-old", 1)}}},
	}
	spID := workflows.WorkflowID(workflows.KindSPFirmware, mgsupdate.SPFirmwareTarget("sled", 3))
	zoneID := workflows.WorkflowID(workflows.KindZoneExpunge, zoneexpunge.ZoneExpungeTarget(tZone))
	bumpID := workflows.WorkflowID(workflows.KindBootImageBump, "cluster/c0")
	sec := tNexusNew
	return &evidence{
		fleet: &fleet{hostP2: mgsupdate.Artifact{SHA256: "p2"}, hostP2ID: "p2", agentNew: map[string]spec.Image{"vm-agent": {UUID: tNewImg}},
			clusterOf: map[string]spec.Cluster{"c0": cluster}},
		expect: &expectations{spSleds: []int{3}, zones: []uuid.UUID{tZone}, agents: []string{"vm-agent"}, clusters: []string{"c0"},
			offline: map[uuid.UUID]bool{}, canaryFailed: map[string]bool{"c0": true}, updateIDs: []string{spID, zoneID, bumpID}},
		before: before, after: after,
		attempts: []attempt{
			{ID: tAttempt, UpdateID: spID, Attempt: 1, Kind: "sp-firmware", Target: "sp/sled/3", State: "completed"},
			{ID: uuid.New(), UpdateID: zoneID, Attempt: 1, Kind: "zone-expunge", Target: "zone/" + tZone.String(), State: "completed"},
			{ID: uuid.New(), UpdateID: "agent-srv", Attempt: 1, Kind: "agent-install", Target: agents.ServerTarget(tServer), State: "completed"},
			{ID: uuid.New(), UpdateID: bumpID, Attempt: 1, Kind: "bootimage-bump", Target: "cluster/c0", State: "failed", Outcome: "CanaryFailed: 0 patched"},
		},
		sagas: map[uuid.UUID]*saga{tSaga: {ID: tSaga, State: "running", Sec: &sec, AdoptGen: 2, AdoptTime: &adopted, History: []sagaEvent{
			{Sec: tNexusOld, Event: "claim", AdoptGen: 1, At: t0},
			{Sec: tNexusNew, Event: "adopt", AdoptGen: 2, At: adopted.Add(time.Second)},
		}}},
		workflows: []*wf{
			{ID: spID, Status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED},
			{ID: zoneID, Status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED},
			{ID: bumpID, Status: enumspb.WORKFLOW_EXECUTION_STATUS_FAILED},
		},
		expunged:      map[uuid.UUID]string{tZone: "nexus", tNexusOld: "nexus"},
		rolloutStatus: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
	}
}

func violationsOf(e *evidence) map[string][]string {
	out := map[string][]string{}
	for _, iv := range evaluate(e) {
		if len(iv.Violations) > 0 {
			out[iv.Name] = iv.Violations
		}
	}
	return out
}

func TestInvariantsCleanRunHasNoViolations(t *testing.T) {
	if got := violationsOf(cleanEvidence()); len(got) > 0 {
		t.Fatalf("clean evidence reported: %v", got)
	}
}

func TestInvariantsAcceptTheChaosOwnTerminateAndOneStart(t *testing.T) {
	e := cleanEvidence()
	e.workflows[1].RunID = "r1"
	e.workflows = append(e.workflows, &wf{ID: e.workflows[1].ID, RunID: "r0", Status: enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED})
	e.terminated = map[string]bool{"r0": true}
	e.restarts = []restartOutcome{{ID: e.workflows[1].ID, RunID: "r1"}}
	e.dup = &dupStart{ID: e.workflows[0].ID, Exits: [2]int{0, 5}, Out: [2]string{`{"workflowId": "x", "runId": "r"}`, "refused"}}
	if got := violationsOf(e); len(got) > 0 {
		t.Fatalf("the chaos's own terminate and a clean duplicate start reported: %v", got)
	}
}

// An expunge cancelled before the zone's removal keeps its recorded
// disposition while the Nexus still runs and finishes its own sagas
// (chaos seed 1, short, once reported 4 violations here).
func TestInvariantsAcceptSagasOfANexusWhoseExpungeWasCancelledBeforeRemoval(t *testing.T) {
	e := cleanEvidence()
	e.expunged[tNexusNew] = "nexus" // recorded, but tNexusNew still runs
	if got := violationsOf(e); len(got) > 0 {
		t.Fatalf("sagas of a Nexus that still runs reported: %v", got)
	}
}

// A rollout whose last workflow task came as the new build became current
// had nothing left to move (make test's seed 1 in CI: the new build was
// deployed as the last child ended, and the rollout ended on chaos-1).
func TestInvariantsAcceptARolloutThatEndedAsTheNewBuildBecameCurrent(t *testing.T) {
	e := cleanEvidence()
	e.newBuildAt = e.workflows[0].Start.Add(time.Minute)
	e.rolloutID = "fleetsaga/rollout/plan/chaos"
	e.workflows = append(e.workflows, &wf{ID: e.rolloutID, Build: firstBuild.BuildID, BuildTaskAt: e.newBuildAt.Add(time.Second),
		Status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED})
	if got := violationsOf(e); len(got) > 0 {
		t.Fatalf("a rollout that ended as the switch happened reported: %v", got)
	}
}

func TestInvariantsCatchEachViolation(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	sp := func(e *evidence) *simmgs.SPTruth { return &e.after.MGS.Racks[0].SPs[0] }
	cases := []struct {
		name      string
		invariant string // prefix of the invariant's name
		want      string // part of the violation text
		mutate    func(e *evidence)
	}{
		{"rollout never ended", "every update", "did not end", func(e *evidence) {
			e.rolloutStatus = enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
		}},
		{"workflow still running", "every update", "still running", func(e *evidence) {
			e.workflows[0].Status = enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
		}},
		{"attempt left active", "every update", "still running", func(e *evidence) { e.attempts[1].State = "running" }},
		{"planned update never ran", "every update", "never ran", func(e *evidence) { e.workflows = e.workflows[1:] }},
		{"completed but device not updated", "ledger agrees", "ledger says completed", func(e *evidence) {
			sp(e).SP.Active.Version = "1.0.0"
		}},
		{"failed but device updated", "ledger agrees", "runs the new version", func(e *evidence) { e.attempts[0].State = "failed" }},
		{"delivery without intent", "ledger agrees", "never recorded", func(e *evidence) {
			sp(e).Deliveries[0].UpdateID = uuid.New()
		}},
		{"update left in flight", "ledger agrees", "still in flight", func(e *evidence) {
			sp(e).Updates["sp"] = map[string]any{"state": "in_progress", "id": "x"}
		}},
		{"zone expunged but still there", "ledger agrees", "still on its sled", func(e *evidence) {
			e.after.Sled.Sleds[0].Zones = []sled.ZoneTruth{{ID: tZone}}
		}},
		{"agents changed without ledger", "ledger agrees", "without any ledger attempt", func(e *evidence) {
			e.attempts = append(e.attempts[:2], e.attempts[3:]...)
		}},
		{"completed install but CNAPI stale", "ledger agrees", "CNAPI", func(e *evidence) {
			e.after.DC.Servers[0].Record[0].ImageUUID = tOldImg
		}},
		{"skipped MachineSet touched", "ledger agrees", "must be skipped", func(e *evidence) {
			ms := e.after.Machine.Clusters["c0"].MachineSets["c0-custom"]
			ms.Image = "ami-new"
			e.after.Machine.Clusters["c0"].MachineSets["c0-custom"] = ms
		}},
		{"two of our updates at once", "no SP ever", "still in flight when", func(e *evidence) {
			id := uuid.New()
			e.attempts = append(e.attempts, attempt{ID: id, UpdateID: "x", Attempt: 2, State: "failed"})
			sp(e).Deliveries = append(sp(e).Deliveries, delivery(id, t0.Add(500*time.Millisecond), time.Second))
		}},
		{"one attempt ID delivered twice", "no update delivered twice", "delivered 2 times", func(e *evidence) {
			sp(e).Deliveries = append(sp(e).Deliveries, delivery(tAttempt, t0.Add(5*time.Second), time.Second))
		}},
		{"image installed twice", "no update delivered twice", "installed 2 times", func(e *evidence) {
			e.after.DC.Installs = append(e.after.DC.Installs, e.after.DC.Installs[0])
		}},
		{"saga left on a stopped Nexus", "no saga", "lost", func(e *evidence) {
			old := tNexusOld
			e.sagas[tSaga].Sec = &old
		}},
		{"saga moved while its Nexus ran", "no saga", "still running", func(e *evidence) {
			e.after.Sled.Nexus[0].Running, e.after.Sled.Nexus[0].StoppedAt = true, nil
		}},
		{"saga moved before its Nexus stopped", "no saga", "stopped only at", func(e *evidence) {
			late := t0.Add(time.Minute)
			e.after.Sled.Nexus[0].StoppedAt = &late
		}},
		{"saga claimed twice", "no saga", "claimed 2 times", func(e *evidence) {
			s := e.sagas[tSaga]
			s.History = append(s.History, sagaEvent{Sec: tNexusNew, Event: "claim", AdoptGen: 2, At: t0})
		}},
		{"saga rows missing", "no saga", "table holds", func(e *evidence) { e.after.Sled.Nexus[1].SagasCreated = 5 }},
		{"SAPI intent ahead", "no SAPI", "SAPI intent", func(e *evidence) {
			e.after.DC.Servers[0].Agents[0].ImageUUID = tOldImg
		}},
		{"canary rollback left an image", "no MachineSet", "after the rollback", func(e *evidence) {
			ms := e.after.Machine.Clusters["c0"].MachineSets["c0-worker-a"]
			ms.Image = "ami-new"
			e.after.Machine.Clusters["c0"].MachineSets["c0-worker-a"] = ms
		}},
		{"canary rollback left the canary", "no MachineSet", "replicas", func(e *evidence) {
			ms := e.after.Machine.Clusters["c0"].MachineSets["c0-worker-a"]
			ms.Replicas = 2
			e.after.Machine.Clusters["c0"].MachineSets["c0-worker-a"] = ms
		}},
		{"failing canary reported completed", "no MachineSet", "yet the bump completed", func(e *evidence) {
			e.attempts[3].State, e.attempts[3].Outcome = "completed", "Reconciled"
		}},
		{"target blocked by a closed run", "no target blocked", "run r1 is closed", func(e *evidence) {
			e.attempts[1].State, e.attempts[1].WorkflowID, e.attempts[1].RunID = "running", e.workflows[1].ID, "r1"
			e.workflows[1].RunID = "r1"
		}},
		{"target blocked by a terminated workflow's leftover", "no target blocked", "latest run is closed", func(e *evidence) {
			e.attempts[1].State, e.attempts[1].WorkflowID, e.attempts[1].RunID = "pending", e.workflows[1].ID, "gone"
		}},
		{"saga owned by an expunged Nexus", "no unfinished saga", "records expunged", func(e *evidence) {
			e.expunged[tNexusNew] = "nexus"
			e.after.Sled.Nexus[1].Running = false
		}},
		{"cancelled bump left a MachineSet patched", "no MachineSet left patched", "bump cancelled", func(e *evidence) {
			e.attempts[3].State, e.attempts[3].Outcome = "cancelled", "Cancelled"
			ms := e.after.Machine.Clusters["c0"].MachineSets["c0-worker-b"]
			ms.Image = "ami-new"
			e.after.Machine.Clusters["c0"].MachineSets["c0-worker-b"] = ms
		}},
		{"MachineSet patched again within one attempt", "no device action", "patched 3 times", func(e *evidence) {
			ms := e.after.Machine.Clusters["c0"].MachineSets["c0-worker-a"]
			ms.ImagePatches = 3
			e.after.Machine.Clusters["c0"].MachineSets["c0-worker-a"] = ms
		}},
		{"SP delivery completed twice", "no device action", "completed 2 deliveries", func(e *evidence) {
			sp(e).Deliveries = append(sp(e).Deliveries, delivery(tAttempt, t0.Add(5*time.Second), time.Second))
		}},
		{"fresh start after a terminate refused", "no restart refused", "was refused", func(e *evidence) {
			e.restarts = []restartOutcome{{ID: "x", RunID: "r2", Err: "TargetBusy: zone/… is busy"}}
		}},
		{"two starters ran two workflows", "no restart refused", "2 runs", func(e *evidence) {
			e.dup = &dupStart{ID: e.workflows[1].ID, Out: [2]string{`{"workflowId": "z", "runId": "r1"}`, `{"workflowId": "z", "runId": "r2"}`}}
			e.workflows = append(e.workflows, &wf{ID: e.workflows[1].ID, RunID: "r2", Status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED})
		}},
		{"both starters refused", "no restart refused", "both concurrent starters were refused", func(e *evidence) {
			e.dup = &dupStart{ID: e.workflows[1].ID, Exits: [2]int{5, 5}}
		}},
		{"rollout left on the old build", "a new build", "is on build \"chaos-1\"", func(e *evidence) {
			e.newBuildAt = e.workflows[0].Start.Add(time.Minute)
			e.rolloutID = "fleetsaga/rollout/plan/chaos"
			e.workflows = append(e.workflows, &wf{ID: e.rolloutID, Build: firstBuild.BuildID, BuildTaskAt: e.newBuildAt.Add(time.Minute),
				Status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED})
		}},
		{"update started after the switch on the old build", "a new build", "ran on build \"chaos-1\"", func(e *evidence) {
			e.newBuildAt = e.workflows[0].Start.Add(-time.Minute)
			for _, w := range e.workflows {
				w.Build = newBuild.BuildID
			}
			e.workflows[1].Build = firstBuild.BuildID
		}},
		{"a terminated run not ours", "every update", "ended Terminated", func(e *evidence) {
			e.workflows[0].Status = enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED
			e.terminated = map[string]bool{"other-run": true}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := cleanEvidence()
			c.mutate(e)
			got := violationsOf(e)
			for name, vs := range got {
				if strings.HasPrefix(name, c.invariant) {
					for _, v := range vs {
						if strings.Contains(v, c.want) {
							return
						}
					}
					t.Fatalf("%s reported %v, none mentions %q", name, vs, c.want)
				}
			}
			t.Fatalf("no violation of %q reported; got %v", c.invariant, got)
		})
	}
}
