package chaos

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// A run must prove it exercised what it claims: these
// pin the pieces that decide what was scheduled, where it was aimed and
// what counts as having fired or checked something.

func TestResetScheduleCoversEveryPoint(t *testing.T) {
	for _, c := range []struct {
		name      string
		cfg       Config
		perStage  bool // every stage gets every point
		allPoints bool
	}{
		{"short", Short(1), false, true},
		{"full", Full(1), true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			const stages = 6
			rs := planResets(rand.New(rand.NewSource(1)), stages, c.cfg.Resets)
			if len(rs) != c.cfg.Resets {
				t.Fatalf("%d resets planned, want %d", len(rs), c.cfg.Resets)
			}
			points := map[resetPoint]bool{}
			byStage := map[int]map[resetPoint]bool{}
			for _, r := range rs {
				points[r.point] = true
				if byStage[r.stage] == nil {
					byStage[r.stage] = map[resetPoint]bool{}
				}
				byStage[r.stage][r.point] = true
			}
			if len(points) != len(resetPoints) {
				t.Fatalf("planned points %v, want all of %v", points, resetPoints)
			}
			if c.perStage {
				for s := 0; s < stages; s++ {
					if len(byStage[s]) != len(resetPoints) {
						t.Fatalf("stage %d gets points %v, want all three", s, byStage[s])
					}
				}
			}
		})
	}
}

func TestResetEventID(t *testing.T) {
	completed := []int64{4, 10, 17, 23}
	rng := rand.New(rand.NewSource(1))
	if id, _ := resetEventID(completed, resetFirst, rng); id != 4 {
		t.Fatalf("first workflow task: event %d, want 4", id)
	}
	if id, _ := resetEventID(completed, resetLast, rng); id != 23 {
		t.Fatalf("last workflow task: event %d, want 23", id)
	}
	for i := 0; i < 20; i++ {
		id, ok := resetEventID(completed, resetRandom, rng)
		if !ok || !contains(completed, id) {
			t.Fatalf("random workflow task: event %d (%v), not a completed task of %v", id, ok, completed)
		}
	}
	if _, ok := resetEventID(nil, resetFirst, rng); ok {
		t.Fatal("a run with no completed workflow task cannot be reset to one")
	}
}

func TestFiredFaultsAreCountedFromFleetsim(t *testing.T) {
	a := armedFaults{
		ids: map[int]faults.Kind{1: faults.MGSDown, 2: faults.Latency, 3: faults.MGSDown, 4: faults.ErrorRate, 5: faults.ErrorRate},
		// 3 was taken back unfired (armed again as 1).
		withdrawn: map[int]bool{3: true},
		left: []faults.Fault{
			{ID: 1, Kind: faults.MGSDown, Fired: 0},   // still armed, never fired
			{ID: 4, Kind: faults.ErrorRate, Fired: 2}, // fired, not used up
			{ID: 5, Kind: faults.ErrorRate, Fired: 0},
		}, // 2 is gone: its Times were used up
	}
	got := a.firedByKind()
	if got[faults.MGSDown] != 0 || got[faults.Latency] != 1 || got[faults.ErrorRate] != 1 {
		t.Fatalf("fired by kind = %v, want mgs_down 0, latency 1, error_rate 1", got)
	}
}

func coverageReport() *Report {
	r := newReport(Short(1), &expectations{targets: map[workflows.Kind]int{}})
	r.Kills, r.PostgresRestarts, r.TemporalRestarts, r.PGBlips = 3, 1, 1, 1
	r.Cancels, r.TerminateRestarts, r.DuplicateStarts, r.NewBuilds = 1, 1, 0, 1
	for _, p := range resetPoints {
		r.ResetsPlanned[string(p)], r.Resets[string(p)] = 1, 1
	}
	r.FaultKinds[faults.MGSDown] = 2
	r.FaultKinds[faults.Latency] = 1
	return r
}

func TestUncoveredNamesEveryAttackKindThatNeverFired(t *testing.T) {
	r := coverageReport()
	r.Resets[string(resetLast)] = 0
	r.Coverage = r.coverage(armedFaults{ids: map[int]faults.Kind{1: faults.MGSDown, 2: faults.MGSDown, 3: faults.Latency},
		left: []faults.Fault{{ID: 1, Kind: faults.MGSDown}, {ID: 2, Kind: faults.MGSDown}}})
	got := r.Uncovered()
	for _, want := range []string{"reset to the last workflow task never fired", "fault mgs_down never fired (2 scheduled)"} {
		if !strings.Contains(got, want) {
			t.Fatalf("Uncovered() = %q, want it to name %q", got, want)
		}
	}
	for _, not := range []string{"fault latency", "two starters", "worker SIGKILL"} {
		if strings.Contains(got, not) {
			t.Fatalf("Uncovered() = %q names %q, which fired (or was not scheduled)", got, not)
		}
	}
	if r.OK() {
		t.Fatal("a run with an attack kind that never fired is OK")
	}
}

func TestUncoveredNamesAnInvariantThatAppliesAndCheckedNothing(t *testing.T) {
	// A clean run ends with no active attempt: invariant 8 has nothing to
	// check at the end (seed 1 once checked 0) unless it was
	// sampled during the run.
	e := cleanEvidence()
	r := coverageReport()
	r.Invariants = evaluate(e)
	if got := r.Uncovered(); !strings.Contains(got, "no target blocked by an attempt whose workflow is closed") {
		t.Fatalf("Uncovered() = %q, want invariant 8 named: it applies and checked nothing", got)
	}
	if got := r.Uncovered(); strings.Contains(got, "cancelled bump") || strings.Contains(got, "new build") {
		t.Fatalf("Uncovered() = %q names an invariant that does not apply (no bump cancelled, no new build)", got)
	}
	e = cleanEvidence()
	e.blocked = blockedSamples{checked: 7}
	r.Invariants = evaluate(e)
	if got := r.Uncovered(); got != "" {
		t.Fatalf("Uncovered() = %q after 7 samples during the run, want nothing", got)
	}
}

func TestBlockedTargetSeenDuringTheRunIsAViolation(t *testing.T) {
	e := cleanEvidence()
	e.blocked = blockedSamples{checked: 4, blocked: map[string]string{"a1": "sp/sled/3 was blocked during the run (12s) by attempt 1"}}
	got := violationsOf(e)["no target blocked by an attempt whose workflow is closed"]
	if len(got) != 1 || !strings.Contains(got[0], "blocked during the run") {
		t.Fatalf("violations %v, want the one seen during the run", got)
	}
}

func TestSagaOwnersCountsTheSagasAnExpungedNexusOwned(t *testing.T) {
	for _, iv := range evaluate(cleanEvidence()) {
		if strings.HasPrefix(iv.Name, "no unfinished saga") {
			if !iv.Applies || iv.Checked != 1 {
				t.Fatalf("%s: applies %v, checked %d; want it to apply and count the saga moved off the expunged Nexus", iv.Name, iv.Applies, iv.Checked)
			}
			return
		}
	}
	t.Fatal("no saga owner invariant")
}

func TestAPIFaultsAreAimedAtTheirStage(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for stage, api := range map[string]string{"zone-expunge": "api/sled-agent", "bootimage-bump": "api/kube"} {
		for _, k := range []faults.Kind{faults.Latency, faults.ErrorRate} {
			if f := apiFault(k, stage, 0, rng); f.Target != api {
				t.Fatalf("%s during %s aimed at %s, want %s", k, stage, f.Target, api)
			}
		}
	}
	for _, k := range []faults.Kind{faults.Latency, faults.ErrorRate} {
		if f := apiFault(k, "agent-install", 0, rng); !strings.HasPrefix(f.Target, "api/") || strings.Contains(f.Target, "mgs") {
			t.Fatalf("%s during agent-install aimed at %s", k, f.Target)
		}
	}
	if canBite(faults.MGSDown, "zone-expunge") || canBite(faults.MGSDown, "agent-install") || !canBite(faults.MGSDown, "host-flash") {
		t.Fatal("mgs_down must be armed only while the SP stages run")
	}
}

func TestAPIScheduleArmsMGSDownInAnSPStage(t *testing.T) {
	a := newAPIAim(rand.New(rand.NewSource(1)), 6, 3)
	rng := rand.New(rand.NewSource(2))
	// The zone stage: mgs_down cannot bite there.
	if k, ok := a.next(2, "zone-expunge", rng); !ok || k == faults.MGSDown {
		t.Fatalf("zone stage: next = %q, %v; want latency or error_rate", k, ok)
	}
	// The SP stage: mgs_down, even past the stage's quota.
	a.perStage[0] = a.quota
	if k, ok := a.next(0, "sp-firmware", rng); !ok || k != faults.MGSDown {
		t.Fatalf("sp stage: next = %q, %v; want mgs_down", k, ok)
	}
	a.done(faults.MGSDown)
	// Its quota is used up; the other kinds spread over the next stages.
	if k, ok := a.next(0, "sp-firmware", rng); ok {
		t.Fatalf("sp stage over its quota: next = %q, want nothing", k)
	}
	if k, ok := a.next(1, "host-flash", rng); !ok || (k != faults.Latency && k != faults.ErrorRate) {
		t.Fatalf("host stage: next = %q, %v; want a pending latency or error_rate", k, ok)
	}
}

func TestAttacksSpareChildrenWhoseDeviceFaultsHaveNotFired(t *testing.T) {
	armed := []faults.Fault{
		{Kind: faults.SPStuck, Target: "sp/sled/3"},
		{Kind: faults.PatchConflict, Target: "machineset/c1/c1-worker-b", Fired: 1},
		{Kind: faults.TaskFailure, Target: "server/44444444-0000-4000-8000-000000000001"},
		{Kind: faults.Latency, Target: "api/kube"},
	}
	for _, c := range []struct {
		kind   workflows.Kind
		target string
		spared bool
	}{
		{workflows.KindSPFirmware, "sp/sled/3", true},
		{workflows.KindHostFlash, "sp/sled/3", true},
		{workflows.KindSPFirmware, "sp/sled/4", false},
		{workflows.KindBootImageBump, "cluster/c1", false}, // its fault fired
		{workflows.KindAgentInstall, "dc/cn-agent+vm-agent", true},
		{workflows.KindZoneExpunge, "zone/22222222-0000-4000-8000-000000000001", false},
	} {
		if got := unfiredFaultOn(armed, faultScope(c.kind, c.target)); got != c.spared {
			t.Errorf("%s %s: spared = %v, want %v", c.kind, c.target, got, c.spared)
		}
	}
}

func TestAPIFaultTakenBackIsArmedAgainBeforeNewOnesAndOutsideTheQuota(t *testing.T) {
	a := newAPIAim(rand.New(rand.NewSource(1)), 6, 4)
	rng := rand.New(rand.NewSource(2))
	a.pending = []faults.Kind{faults.Latency}
	a.perStage[3] = a.quota // the stage's own share is used up
	// error_rate was taken back unfired at the end of its stage.
	a.pending = append([]faults.Kind{faults.ErrorRate}, a.pending...)
	a.owed[faults.ErrorRate] = 1
	if k, ok := a.next(3, "agent-install", rng); !ok || k != faults.ErrorRate {
		t.Fatalf("next = %q, %v; want the error_rate taken back, armed again", k, ok)
	}
	a.done(faults.ErrorRate)
	a.owed[faults.ErrorRate] = 0
	if k, ok := a.next(3, "agent-install", rng); ok {
		t.Fatalf("next = %q over the stage's quota, want nothing (latency waits for the next stage)", k)
	}
	if k, ok := a.next(4, "agent-drift", rng); !ok || k != faults.Latency {
		t.Fatalf("next stage: next = %q, %v; want the latency never armed yet", k, ok)
	}
}
