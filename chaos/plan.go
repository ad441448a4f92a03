package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/kinds/bootimage"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// A stage builder makes the chaos rollout's stage for one update kind from
// the fleet, and arms that kind's device faults (seeded) before the rollout
// starts. Every kind in kinds.Kinds must have one: a kind that lands
// without a builder makes the run refuse to start, so it gets wired here.
type stageBuilder func(b *planBuilder) (rollout.Stage, error)

// stageOrder is the order of the rollout's stages (kinds missing from
// kinds.Kinds are left out).
var stageOrder = []struct {
	kind  workflows.Kind
	build stageBuilder
}{
	{workflows.KindSPFirmware, spFirmwareStage},
	{workflows.KindHostFlash, hostFlashStage},
	{workflows.KindZoneExpunge, zoneExpungeStage},
	{workflows.KindAgentInstall, agentInstallStage},
	{workflows.KindAgentDrift, agentDriftStage},
	{workflows.KindBootImageBump, bootImageStage},
	// Not a fleet rollout's stage: an operator's recovery of one sled's
	// host (its own faults are covered by kinds/mgsupdate's tests).
	{workflows.KindHostRecovery, nil},
}

// planBuilder carries what the builders share.
type planBuilder struct {
	cfg   Config
	fleet *fleet
	rng   *rand.Rand
	// faults are the device faults to arm before the rollout starts.
	faults []faults.Fault
	// expect records what the plan targets, for the invariants.
	expect *expectations
}

// expectations are what the plan asked for, per kind, for the checks.
type expectations struct {
	spSleds      []int       // cubbies whose SP firmware is updated
	hostSleds    []int       // cubbies whose host boot flash is updated
	zones        []uuid.UUID // zones expunged
	nexusZones   []uuid.UUID // of which Nexus zones
	agents       []string    // agents installed on every server
	servers      int
	offline      map[uuid.UUID]bool       // servers armed offline (expected failures)
	clusters     []string                 // clusters bumped
	canaryFailed map[string]bool          // clusters whose canary was armed to fail
	updates      int                      // plan updates
	updateIDs    []string                 // their workflow IDs
	planned      map[string]plannedUpdate // by workflow ID, for a fresh start
	// dupZone is the zone the duplicate starters expunge (outside the
	// plan); dupSled is its sled.
	dupZone, dupSled uuid.UUID
	targets          map[workflows.Kind]int
}

// plannedUpdate is one update of the plan with its kind.
type plannedUpdate struct {
	Kind workflows.Kind
	rollout.PlanUpdate
}

func (e *expectations) totalTargets() int {
	n := 0
	for _, v := range e.targets {
		n += v
	}
	return n
}

// buildPlan makes the chaos rollout covering every registered kind.
func buildPlan(cfg Config, f *fleet) (rollout.RolloutInput, []faults.Fault, *expectations, error) {
	b := &planBuilder{cfg: cfg, fleet: f, rng: rand.New(rand.NewSource(cfg.Seed)),
		expect: &expectations{offline: map[uuid.UUID]bool{}, canaryFailed: map[string]bool{}, targets: map[workflows.Kind]int{},
			planned: map[string]plannedUpdate{}}}
	wired := map[workflows.Kind]bool{}
	in := rollout.RolloutInput{Name: fmt.Sprintf("chaos-%d", cfg.Seed)}
	for _, st := range stageOrder {
		wired[st.kind] = true
		if _, ok := kinds.Kinds[st.kind]; !ok || st.build == nil {
			continue
		}
		stage, err := st.build(b)
		if err != nil {
			return in, nil, nil, fmt.Errorf("stage %s: %w", st.kind, err)
		}
		if len(stage.Updates) == 0 {
			continue
		}
		b.expect.updates += len(stage.Updates)
		for _, u := range stage.Updates {
			id := workflows.WorkflowID(stage.Kind, u.Target)
			b.expect.updateIDs = append(b.expect.updateIDs, id)
			b.expect.planned[id] = plannedUpdate{Kind: stage.Kind, PlanUpdate: u}
		}
		in.Stages = append(in.Stages, stage)
	}
	var missing []string
	for k := range kinds.Kinds {
		if !wired[k] {
			missing = append(missing, string(k))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return in, nil, nil, fmt.Errorf("update kind(s) %s are registered in kinds.Kinds but the chaos rollout has no stage for them: add a builder to chaos/plan.go", strings.Join(missing, ", "))
	}
	if err := in.Validate(); err != nil {
		return in, nil, nil, fmt.Errorf("chaos plan: %w", err)
	}
	return in, b.faults, b.expect, nil
}

// update encodes one plan update through its kind's UpdateInput (the same
// path `starter rollout` takes), validating it.
func update(in workflows.UpdateInput) (rollout.PlanUpdate, error) {
	if err := in.Validate(); err != nil {
		return rollout.PlanUpdate{}, err
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return rollout.PlanUpdate{}, err
	}
	return rollout.PlanUpdate{Target: in.Target(), Artifact: in.ArtifactVersion(), Input: raw}, nil
}

// mgsTiming: the real pacing divided by the speed-up; failure detection
// short enough that a killed worker's step moves on within seconds.
func (b *planBuilder) mgsTiming(newVersion time.Duration) mgsupdate.MGSTiming {
	scale := func(d time.Duration) time.Duration {
		return max(time.Duration(float64(d)/b.cfg.SpeedUp), 20*time.Millisecond)
	}
	return mgsupdate.MGSTiming{
		PollInterval:       scale(3 * time.Second),
		ProgressTimeout:    max(scale(240*time.Second), 3*time.Second),
		TakeoverTimeout:    max(scale(240*time.Second), 3*time.Second),
		ResetRetryInterval: 2 * time.Second,
		NewVersionTimeout:  newVersion,
		AttemptDelay:       scale(60 * time.Second),
		MaxAttempts:        8,
		CheckpointEvery:    5 * time.Second,
		HeartbeatTimeout:   5 * time.Second,
	}
}

func (b *planBuilder) arm(f faults.Fault) { b.faults = append(b.faults, f) }

// machineBoot is how long a new machine takes to join, scaled.
func (b *planBuilder) machineBoot() time.Duration {
	return time.Duration(float64(b.fleet.spec.Timings.MachineBootTime.Duration) / b.cfg.SpeedUp)
}

// exclusiveMGSSleds keeps the two switch-attached sleds (where the MGS
// instances run) from updating together.
func (b *planBuilder) exclusiveMGSSleds(targets map[int]string) [][]string {
	var g []string
	for _, c := range b.fleet.mgsSleds() {
		if t, ok := targets[c]; ok {
			g = append(g, t)
		}
	}
	if len(g) == 2 && g[0] != g[1] {
		return [][]string{g}
	}
	return nil
}

func spFirmwareStage(b *planBuilder) (rollout.Stage, error) {
	sleds := b.fleet.sleds()
	idx := pick(b.rng, len(sleds), b.cfg.SPUpdates)
	st := rollout.Stage{Name: "sp-firmware", Kind: workflows.KindSPFirmware, Concurrency: b.cfg.Concurrency, FailureBudget: len(idx)}
	targets := map[int]string{}
	for n, i := range idx {
		s := sleds[i]
		in := mgsupdate.SPFirmwareInput{SP: spTarget(s), Artifact: b.fleet.spImage,
			Timing: b.mgsTiming(30 * time.Second)}
		u, err := update(in)
		if err != nil {
			return st, err
		}
		st.Updates = append(st.Updates, u)
		targets[s.Cubby] = u.Target
		b.expect.spSleds = append(b.expect.spSleds, s.Cubby)
		// Device faults: each SP fault kind on one of the first SPs, then
		// on every third one (the SPs are in seeded order).
		fault := fmt.Sprintf("sp/sled/%d", s.Cubby)
		which := -1
		switch {
		case n < 4:
			which = n
		case n%3 == 0:
			which = (n / 3) % 4
		}
		switch which {
		case 0:
			b.arm(faults.Fault{Kind: faults.SPResetMidDelivery, Target: fault, Times: 1, AfterPercent: 20 + b.rng.Intn(60)})
		case 1:
			b.arm(faults.Fault{Kind: faults.UpdateFailed, Target: fault, Times: 1, AfterPercent: 10 + b.rng.Intn(80)})
		case 2:
			b.arm(faults.Fault{Kind: faults.SPStuck, Target: fault, Times: 1, AfterPercent: 30 + b.rng.Intn(50)})
		case 3:
			b.arm(faults.Fault{Kind: faults.ForeignUpdate, Target: fault, Times: 1, Version: foreignVersion})
			// Our update still lands after the foreign one: the reset that
			// activates it loses its reply.
			b.arm(faults.Fault{Kind: faults.ResetReplyLost, Target: fault, Times: 1})
		}
	}
	st.Exclusive = b.exclusiveMGSSleds(targets)
	b.expect.targets[workflows.KindSPFirmware] = len(idx)
	return st, nil
}

func hostFlashStage(b *planBuilder) (rollout.Stage, error) {
	sleds := b.fleet.sleds()
	idx := pick(b.rng, len(sleds), b.cfg.HostUpdates)
	st := rollout.Stage{Name: "host-flash", Kind: workflows.KindHostFlash, Concurrency: b.cfg.Concurrency, FailureBudget: len(idx)}
	targets := map[int]string{}
	for n, i := range idx {
		s := sleds[i]
		in := mgsupdate.HostFlashInput{Sled: spTarget(s), Phase1: b.fleet.hostP1, Phase2: b.fleet.hostP2,
			Timing: b.mgsTiming(90 * time.Second)}
		u, err := update(in)
		if err != nil {
			return st, err
		}
		st.Updates = append(st.Updates, u)
		targets[s.Cubby] = u.Target
		b.expect.hostSleds = append(b.expect.hostSleds, s.Cubby)
		if n%6 == 2 {
			b.arm(faults.Fault{Kind: faults.SPResetMidDelivery, Target: fmt.Sprintf("sp/sled/%d", s.Cubby), Times: 1, AfterPercent: 10 + b.rng.Intn(80)})
		}
	}
	st.Exclusive = b.exclusiveMGSSleds(targets)
	b.expect.targets[workflows.KindHostFlash] = len(idx)
	return st, nil
}

func zoneExpungeStage(b *planBuilder) (rollout.Stage, error) {
	type cand struct {
		sled uuid.UUID
		zone spec.Zone
	}
	var plain, nexus []cand
	for _, s := range b.fleet.sleds() {
		for _, z := range s.Zones {
			if z.Kind == spec.ZoneKindNexus {
				nexus = append(nexus, cand{s.ID, z})
			} else {
				plain = append(plain, cand{s.ID, z})
			}
		}
	}
	var chosen []cand
	for _, i := range pick(b.rng, len(plain), b.cfg.Zones) {
		chosen = append(chosen, plain[i])
	}
	// NexusExpunges Nexus zones (never the last one), first in the stage
	// so they run at once: their sagas must move to a live Nexus, and only
	// after inventory proves each gone.
	var nx []cand
	if len(nexus) > 1 {
		for _, i := range pick(b.rng, len(nexus), min(max(b.cfg.NexusExpunges, 1), len(nexus)-1)) {
			nx = append(nx, nexus[i])
		}
	}
	chosen = append(nx, chosen...)
	// The duplicate starters' zone: a plain zone the plan leaves alone.
	if b.cfg.DuplicateStarts {
		var rest []cand
		for _, c := range plain {
			taken := false
			for _, o := range chosen {
				taken = taken || o.zone.ID == c.zone.ID
			}
			if !taken {
				rest = append(rest, c)
			}
		}
		if len(rest) > 0 {
			c := rest[b.rng.Intn(len(rest))]
			b.expect.dupZone, b.expect.dupSled = c.zone.ID, c.sled
			b.expect.zones = append(b.expect.zones, c.zone.ID)
			b.expect.updateIDs = append(b.expect.updateIDs, workflows.WorkflowID(workflows.KindZoneExpunge, zoneexpunge.ZoneExpungeTarget(c.zone.ID)))
		}
	}
	st := rollout.Stage{Name: "zone-expunge", Kind: workflows.KindZoneExpunge, Concurrency: b.cfg.Concurrency, FailureBudget: len(chosen)}
	timing := zoneexpunge.ZoneExpungeTiming{PutTimeout: 3 * time.Minute, RetryInitial: 200 * time.Millisecond, RetryMax: 2 * time.Second,
		PollInterval: 200 * time.Millisecond, ProofTimeout: 2 * time.Minute, HeartbeatTimeout: 5 * time.Second}
	for n, c := range chosen {
		in := zoneexpunge.ZoneExpungeInput{Sled: c.sled, Zone: c.zone.ID, Timing: timing}
		if c.zone.Kind == spec.ZoneKindNexus {
			in.RackSleds = b.fleet.sledIDs()
			b.expect.nexusZones = append(b.expect.nexusZones, c.zone.ID)
		}
		u, err := update(in)
		if err != nil {
			return st, err
		}
		st.Updates = append(st.Updates, u)
		b.expect.zones = append(b.expect.zones, c.zone.ID)
		if n%4 == 1 || c.zone.Kind == spec.ZoneKindNexus {
			b.arm(faults.Fault{Kind: faults.ZoneRemovalFailure, Target: "zone/" + c.zone.ID.String(), Times: 1 + b.rng.Intn(3)})
		}
	}
	b.expect.targets[workflows.KindZoneExpunge] = len(chosen)
	return st, nil
}

// chaosAgents are installed on every server: cn-agent (part of the install
// machinery: installed alone) and two ordinary agents.
var chaosAgents = []string{"cn-agent", "vm-agent", "firewaller"}

func agentInstallStage(b *planBuilder) (rollout.Stage, error) {
	servers := b.fleet.spec.Datacenter.Servers
	st := rollout.Stage{Name: "agent-install", Kind: workflows.KindAgentInstall, Concurrency: 1, FailureBudget: 1}
	if len(servers) == 0 {
		return st, nil
	}
	var reqs []agents.AgentRequest
	for _, name := range chaosAgents {
		im, ok := b.fleet.agentNew[name]
		if !ok {
			return st, fmt.Errorf("the generated datacenter has no new image of %s", name)
		}
		reqs = append(reqs, agents.AgentRequest{Name: name, ImageUUID: im.UUID})
	}
	b.expect.agents = chaosAgents
	b.expect.servers = len(servers)
	// Seeded device faults: an offline server (an expected failure: it is
	// never touched) and failing install tasks, aimed at vm-agent's: a
	// failed cn-agent install is known only when the new cn-agent has not
	// reported within the product's 30 minutes (kinds/agents
	// activities_confirm.go), far beyond chaos's time, and chaos's workers
	// run the product's waits.
	offline := max(1, len(servers)/40)
	for n, i := range pick(b.rng, len(servers), offline+max(1, len(servers)/8)) {
		target := "server/" + servers[i].UUID.String()
		if n < offline {
			b.arm(faults.Fault{Kind: faults.ServerOffline, Target: target})
			b.expect.offline[servers[i].UUID] = true
			continue
		}
		b.arm(faults.Fault{Kind: faults.TaskFailure, Target: target + "/vm-agent", Times: 1})
	}
	in := agents.AgentInstallInput{
		Agents: reqs, Selection: agents.ServerSelection{All: true},
		Concurrency: max(2, b.cfg.Concurrency), MaxFailures: offline + len(servers)/4 + 2,
		PollInterval: time.Second, StragglerCheck: 5 * time.Second,
	}
	u, err := update(in)
	if err != nil {
		return st, err
	}
	st.Updates = append(st.Updates, u)
	b.expect.targets[workflows.KindAgentInstall] = len(servers)
	return st, nil
}

func agentDriftStage(b *planBuilder) (rollout.Stage, error) {
	st := rollout.Stage{Name: "agent-drift", Kind: workflows.KindAgentDrift, Concurrency: 1, FailureBudget: 1}
	if len(b.fleet.spec.Datacenter.Servers) == 0 {
		return st, nil
	}
	in := agents.AgentDriftInput{Agents: chaosAgents, Selection: agents.ServerSelection{All: true}, Repair: true,
		Concurrency: max(2, b.cfg.Concurrency), MaxFailures: len(b.fleet.spec.Datacenter.Servers), PollInterval: time.Second}
	u, err := update(in)
	if err != nil {
		return st, err
	}
	st.Updates = append(st.Updates, u)
	b.expect.targets[workflows.KindAgentDrift] = 0 // the servers are counted by agent-install
	return st, nil
}

func bootImageStage(b *planBuilder) (rollout.Stage, error) {
	clusters := b.fleet.spec.Clusters
	st := rollout.Stage{Name: "bootimage-bump", Kind: workflows.KindBootImageBump, Concurrency: b.cfg.Concurrency, FailureBudget: len(clusters)}
	failCanary := -1
	if len(clusters) > 0 {
		failCanary = b.rng.Intn(len(clusters))
	}
	machineSets := 0
	for i, c := range clusters {
		canary := c.Name + "-worker-a"
		in := &bootimage.BootImageBumpInput{
			Cluster: c.Name, Selection: bootimage.SelectAll, Skew: bootimage.SkewAutomatic,
			Canary:         &bootimage.BootImageCanary{MachineSet: canary, Timeout: max(3*b.machineBoot(), 5*time.Second)},
			SettleInterval: 500 * time.Millisecond, PollInterval: 200 * time.Millisecond,
			PreconditionTimeout: 2 * time.Minute,
		}
		u, err := update(in)
		if err != nil {
			return st, err
		}
		st.Updates = append(st.Updates, u)
		b.expect.clusters = append(b.expect.clusters, c.Name)
		machineSets += len(c.MachineSets)
		if i == failCanary {
			// The canary never joins: every MachineSet patched in the run
			// must be restored.
			b.arm(faults.Fault{Kind: faults.MachineBootFailure, Target: "machineset/" + c.Name + "/" + canary})
			b.expect.canaryFailed[c.Name] = true
		} else if b.cfg.NoOwners {
			// With the owners on the MCO owns these MachineSets and the bump
			// never patches them: faults on its patches could not fire.
			b.arm(faults.Fault{Kind: faults.PatchConflict, Target: "machineset/" + c.Name + "/" + c.Name + "-worker-b", Times: 1})
			b.arm(faults.Fault{Kind: faults.MachineSetRevert, Target: "machineset/" + c.Name + "/" + c.Name + "-arm64", Times: 1})
		}
	}
	b.expect.targets[workflows.KindBootImageBump] = machineSets
	return st, nil
}
