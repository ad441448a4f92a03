package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/fleetsaga/fleetsaga/fleet/triton"
	"github.com/fleetsaga/fleetsaga/fleetsim/dc"
	simmgs "github.com/fleetsaga/fleetsaga/fleetsim/mgs"
	"github.com/fleetsaga/fleetsaga/fleetsim/spec"
	"github.com/fleetsaga/fleetsaga/kinds/agents"
	"github.com/fleetsaga/fleetsaga/kinds/mgsupdate"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// evidence is everything the invariants look at.
type evidence struct {
	fleet         *fleet
	expect        *expectations
	before, after *truth
	attempts      []attempt
	sagas         map[uuid.UUID]*saga
	expunged      map[uuid.UUID]string // zones the ledger records expunged, by kind
	// terminated are the runs the chaos terminated; restarts how the fresh
	// runs after them ended; dup the duplicate starters (nil = not run).
	terminated    map[string]bool
	restarts      []restartOutcome
	dup           *dupStart
	workflows     []*wf
	rolloutID     string
	rolloutStatus enumspb.WorkflowExecutionStatus
	// newBuildAt is when a new worker build became current (zero: never).
	newBuildAt time.Time
	// resetRuns are the chaos's resets; blocked invariant 8 as sampled
	// during the run.
	resetRuns []resetRun
	blocked   blockedSamples

	latestByUpdate map[string]*attempt
	byTarget       map[string][]*attempt
	byID           map[uuid.UUID]*attempt
}

func (e *evidence) index() {
	e.latestByUpdate = map[string]*attempt{}
	e.byTarget = map[string][]*attempt{}
	e.byID = map[uuid.UUID]*attempt{}
	for i := range e.attempts {
		a := &e.attempts[i]
		// The latest attempt is the last one created: a fresh start after a
		// terminate numbers its attempts from 1 again.
		if l := e.latestByUpdate[a.UpdateID]; l == nil || a.CreatedAt.After(l.CreatedAt) ||
			(a.CreatedAt.Equal(l.CreatedAt) && a.Attempt > l.Attempt) {
			e.latestByUpdate[a.UpdateID] = a
		}
		e.byTarget[a.Target] = append(e.byTarget[a.Target], a)
		e.byID[a.ID] = a
	}
}

// invariant is one property the run must keep, with how many things it
// examined and each violation found. Applies says the run did what the
// invariant is about, so it must have examined something (coverage.go).
type invariant struct {
	Name       string   `json:"name"`
	Applies    bool     `json:"applies"`
	Checked    int      `json:"checked"`
	Violations []string `json:"violations"`
}

func (iv *invariant) fail(format string, args ...any) {
	iv.Violations = append(iv.Violations, fmt.Sprintf(format, args...))
}

var invariantChecks = []struct {
	name    string
	check   func(e *evidence, iv *invariant)
	applies func(e *evidence) bool
}{
	{"every update reached a terminal state", checkTerminal, always},
	{"ledger agrees with fleetsim's truth for every target", checkLedgerTruth, always},
	{"no SP ever had two updates of ours in flight", checkSPOverlap, hasSPs},
	{"no update delivered twice under one attempt ID", checkDeliveredOnce, hasDevices},
	{"no saga lost, duplicated, or moved while its Nexus ran", checkSagas, hasNexusExpunges},
	{"no SAPI intent ahead of the server's actual agents", checkSAPIIntent, hasAgents},
	{"no MachineSet left on a rolled-back canary image", checkCanaryRollback, hasFailingCanary},
	{"no target blocked by an attempt whose workflow is closed", checkBlockedTargets, always},
	{"no unfinished saga owned by an expunged Nexus", checkSagaOwners, expungedNexus},
	{"no MachineSet left patched by a cancelled bump", checkCancelledBumps, hasCancelledBump},
	{"no device action done twice", checkDeviceActionsOnce, hasDeviceActions},
	{"no restart refused, no duplicate start run twice", checkDuplicateStart, hasRestartsOrDup},
	{"a new build deployed mid-rollout took the rollout over", checkNewBuild, hasNewBuild},
}

func evaluate(e *evidence) []*invariant {
	e.index()
	var out []*invariant
	for _, c := range invariantChecks {
		iv := &invariant{Name: c.name, Applies: c.applies(e)}
		c.check(e, iv)
		sort.Strings(iv.Violations)
		out = append(out, iv)
	}
	return out
}

func terminal(state string) bool {
	return state == "completed" || state == "failed" || state == "cancelled"
}

// checkTerminal: the rollout closed, no workflow still runs, no ledger
// attempt is still active, and every planned update ran.
func checkTerminal(e *evidence, iv *invariant) {
	iv.Checked++
	if e.rolloutStatus == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || e.rolloutStatus == enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED {
		iv.fail("rollout %s did not end within the time bound", e.rolloutID)
	}
	seen := map[string]bool{}
	for _, w := range e.workflows {
		iv.Checked++
		seen[w.ID] = true
		if w.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			iv.fail("workflow %s (%s) still running", w.ID, w.Type)
		}
		if w.Status == enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED && e.terminated[w.RunID] {
			continue // the chaos terminated it
		}
		if w.Status == enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT || w.Status == enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED {
			iv.fail("workflow %s (%s) ended %s instead of completing or failing", w.ID, w.Type, w.Status)
		}
	}
	for _, a := range e.attempts {
		iv.Checked++
		if !terminal(a.State) {
			iv.fail("ledger attempt %d of %s (%s) is still %s", a.Attempt, a.UpdateID, a.Target, a.State)
		}
	}
	for _, id := range e.expect.updateIDs {
		if !seen[id] {
			iv.fail("planned update %s never ran (skipped)", id)
		}
	}
}

func (e *evidence) latest(kind workflows.Kind, target string) *attempt {
	return e.latestByUpdate[workflows.WorkflowID(kind, target)]
}

// checkLedgerTruth: for every device the ledger and fleetsim tell the same
// story (a completed update is on the device, a device that changed has a
// completed update), devices nobody targeted are unchanged, and every
// delivery of ours carries an attempt ID the ledger wrote first.
func checkLedgerTruth(e *evidence, iv *invariant) {
	checkSPs(e, iv)
	checkZones(e, iv)
	checkAgents(e, iv)
	checkMachineSets(e, iv)
}

func spByCubby(t *truth) map[int]simmgs.SPTruth {
	out := map[int]simmgs.SPTruth{}
	for _, r := range t.MGS.Racks {
		for _, s := range r.SPs {
			if s.Type == "sled" {
				out[s.Slot] = s
			}
		}
	}
	return out
}

func contains[T comparable](xs []T, x T) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func checkSPs(e *evidence, iv *invariant) {
	before, after := spByCubby(e.before), spByCubby(e.after)
	cubbies := make([]int, 0, len(after))
	for c := range after {
		cubbies = append(cubbies, c)
	}
	sort.Ints(cubbies)
	for _, c := range cubbies {
		sp, was := after[c], before[c]
		iv.Checked++
		for comp, st := range sp.Updates {
			if s, _ := st["state"].(string); s == "preparing" || s == "in_progress" {
				iv.fail("sled %d: %s update %v still in flight at the end", c, comp, st["id"])
			}
		}
		for _, d := range sp.Deliveries {
			if !d.Foreign && e.byID[d.UpdateID] == nil {
				iv.fail("sled %d: delivery %s (%s) carries an ID the ledger never recorded", c, d.UpdateID, d.Component)
			}
		}
		// SP firmware.
		if contains(e.expect.spSleds, c) {
			target := mgsupdate.SPFirmwareTarget("sled", uint16(c))
			a := e.latest(workflows.KindSPFirmware, target)
			onTarget := sp.SP.Active.Version == spTargetVersion
			switch {
			case a == nil:
				iv.fail("%s: no ledger attempt", target)
			case a.State == "completed" && !onTarget:
				iv.fail("%s: ledger says completed (%s) but the SP runs %s", target, a.Outcome, sp.SP.Active.Version)
			case a.State != "completed" && onTarget:
				iv.fail("%s: ledger says %s (%s) but the SP runs the new version %s", target, a.State, a.Error, spTargetVersion)
			}
		} else if sp.SP.Active.Version != was.SP.Active.Version {
			iv.fail("sled %d: not targeted, yet its SP went from %s to %s", c, was.SP.Active.Version, sp.SP.Active.Version)
		}
		// Host boot flash.
		h := sp.Host
		booted := h.State == simmgs.HostRunning && h.Slots[h.BootedSlot].Version == hostTargetVersion &&
			strings.EqualFold(h.BootedPhase2, e.fleet.hostP2ID)
		if contains(e.expect.hostSleds, c) {
			// The rack's path never leaves a host on a slot it cannot
			// boot: a failed or cancelled update puts it back.
			if h.State == simmgs.HostPhase2Missing || h.State == simmgs.HostBootFailed {
				iv.fail("sled %d: host stranded (%s) on slot %d: %s", c, h.State, h.BootedSlot, h.BootFailure)
			}
			target := mgsupdate.HostFlashTarget(uint16(c))
			a := e.latest(workflows.KindHostFlash, target)
			switch {
			case a == nil:
				iv.fail("%s: no ledger attempt", target)
			case a.State == "completed" && !booted:
				iv.fail("%s: ledger says completed but the host is %s on slot %d (%s), phase 2 %s", target, h.State, h.BootedSlot,
					h.Slots[h.BootedSlot].Version, short(h.BootedPhase2))
			case a.State != "completed" && booted:
				iv.fail("%s: ledger says %s (%s) but the host booted the new image", target, a.State, a.Error)
			}
		} else if h.Slots != was.Host.Slots || h.BootedSlot != was.Host.BootedSlot {
			iv.fail("sled %d: not targeted, yet its host boot flash changed", c)
		}
	}
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func zonesPresent(t *truth) map[uuid.UUID]uuid.UUID {
	out := map[uuid.UUID]uuid.UUID{}
	for _, s := range t.Sled.Sleds {
		for _, z := range s.Zones {
			out[z.ID] = s.ID
		}
	}
	return out
}

func checkZones(e *evidence, iv *invariant) {
	before, after := zonesPresent(e.before), zonesPresent(e.after)
	for _, z := range e.expect.zones {
		iv.Checked++
		target := zoneexpunge.ZoneExpungeTarget(z)
		a := e.latest(workflows.KindZoneExpunge, target)
		_, present := after[z]
		switch {
		case a == nil:
			iv.fail("%s: no ledger attempt", target)
		case a.State == "completed" && present:
			iv.fail("%s: ledger says expunged (%s) but the zone is still on its sled", target, a.Outcome)
		case a.State != "completed" && !present:
			iv.fail("%s: ledger says %s (%s) but the zone is gone", target, a.State, a.Error)
		}
	}
	for z := range before {
		if _, ok := after[z]; !ok && !contains(e.expect.zones, z) {
			iv.Checked++
			iv.fail("zone %s: not targeted, yet it is gone", z)
		}
	}
}

func agentsByName(as []triton.Agent) map[string]triton.Agent {
	out := map[string]triton.Agent{}
	for _, a := range as {
		out[a.Name] = a
	}
	return out
}

func serversByUUID(t *truth) map[uuid.UUID]dc.ServerTruth {
	out := map[uuid.UUID]dc.ServerTruth{}
	for _, s := range t.DC.Servers {
		out[s.UUID] = s
	}
	return out
}

func checkAgents(e *evidence, iv *invariant) {
	before := serversByUUID(e.before)
	for _, s := range e.after.DC.Servers {
		iv.Checked++
		target := agents.ServerTarget(s.UUID)
		atts := e.byTarget[target]
		actual, record, was := agentsByName(s.Agents), agentsByName(s.Record), agentsByName(before[s.UUID].Agents)
		intent := map[string]uuid.UUID{}
		for _, in := range s.Instances {
			intent[in.Service] = in.ImageUUID
		}
		completed := false
		for _, a := range atts {
			completed = completed || a.State == "completed"
		}
		changed := false
		for name, ag := range actual {
			if ag.ImageUUID != was[name].ImageUUID {
				changed = true
			}
		}
		switch {
		case e.expect.offline[s.UUID] && changed:
			iv.fail("%s (%s): offline the whole run, yet its agents changed", target, s.Hostname)
		case len(atts) == 0 && changed:
			iv.fail("%s (%s): agents changed without any ledger attempt", target, s.Hostname)
		}
		if !completed {
			continue
		}
		for _, name := range e.expect.agents {
			ag, runs := actual[name]
			if !runs {
				continue
			}
			want := e.fleet.agentNew[name].UUID
			if ag.ImageUUID != want || record[name].ImageUUID != want || intent[name] != want {
				iv.fail("%s (%s): ledger has a completed install but %s is actual %s, CNAPI %s, SAPI %s (want %s)", target, s.Hostname,
					name, short(ag.ImageUUID.String()), short(record[name].ImageUUID.String()), short(intent[name].String()), short(want.String()))
			}
		}
	}
}

// golden is the image fleetsim reports for a MachineSet on the current
// release's golden boot image ("" when it cannot be derived).
func golden(c spec.Cluster, ms spec.MachineSet) string {
	var rel *spec.BootImageRelease
	for i := range c.BootImages {
		if c.BootImages[i].Release == c.Release {
			rel = &c.BootImages[i]
		}
	}
	if rel == nil {
		return ""
	}
	arch := ms.Arch
	if arch == "" {
		arch = c.ControlPlaneArch
	}
	if arch == "" {
		arch = "amd64"
	}
	im, ok := rel.Images[arch]
	platform := ms.Platform
	if platform == "" {
		platform = c.Platform
	}
	switch platform {
	case spec.PlatformAWS:
		region := ms.Region
		if region == "" {
			region = spec.DefaultRegion(platform)
		}
		if ok {
			return im.AWS[region]
		}
	case spec.PlatformGCP:
		if ok && im.GCP != nil {
			return "projects/" + im.GCP.Project + "/global/images/" + im.GCP.Name
		}
	case spec.PlatformAzure:
		if ok && im.Azure != nil {
			a := im.Azure.Gen1
			if ms.AzureGen2 {
				a = im.Azure.Gen2
			}
			return strings.Join([]string{a.Publisher, a.Offer, a.SKU, a.Version}, ":")
		}
	case spec.PlatformVSphere:
		return spec.VSphereTemplate(rel.OSVersion)
	}
	return ""
}

// skippedByDesign are the SampleCluster MachineSets a bump must never touch.
var skippedByDesign = []string{"-current", "-custom", "-owned", "-windows"}

// patchedByDesign are the ones a clean bump moves to the golden image.
var patchedByDesign = []string{"-worker-a", "-worker-b", "-arm64"}

func checkMachineSets(e *evidence, iv *invariant) {
	for _, name := range e.expect.clusters {
		c := e.fleet.clusterOf[name]
		was, now := e.before.Machine.Clusters[name], e.after.Machine.Clusters[name]
		a := e.latest(workflows.KindBootImageBump, "cluster/"+name)
		if a == nil {
			iv.fail("cluster/%s: no ledger attempt", name)
			continue
		}
		for _, ms := range c.MachineSets {
			iv.Checked++
			before, after := was.MachineSets[ms.Name], now.MachineSets[ms.Name]
			for _, suffix := range skippedByDesign {
				if suffix == "-custom" && (ms.Platform == spec.PlatformAzure || (ms.Platform == "" && c.Platform == spec.PlatformAzure)) {
					// An Azure image by resource ID is an install-time upload
					// to the MCO, which moves it to the marketplace
					// (machine-config-operator pkg/controller/bootimage/platform_helpers.go).
					continue
				}
				if strings.HasSuffix(ms.Name, suffix) && after.Image != before.Image {
					iv.fail("cluster/%s: %s must be skipped, yet its image went from %s to %s", name, ms.Name, before.Image, after.Image)
				}
			}
			if a.State != "completed" {
				continue
			}
			for _, suffix := range patchedByDesign {
				if !strings.HasSuffix(ms.Name, suffix) {
					continue
				}
				if g := golden(c, ms); g != "" && after.Image != g {
					iv.fail("cluster/%s: ledger says %s but %s boots %s, not the golden %s", name, short(a.Outcome), ms.Name, after.Image, g)
				}
			}
		}
	}
}

// checkSPOverlap: on every SP, our deliveries never overlap in time.
func checkSPOverlap(e *evidence, iv *invariant) {
	for c, sp := range spByCubby(e.after) {
		var ours []simmgs.Delivery
		for _, d := range sp.Deliveries {
			if !d.Foreign {
				ours = append(ours, d)
			}
		}
		sort.Slice(ours, func(i, j int) bool { return ours[i].StartedAt.Before(ours[j].StartedAt) })
		iv.Checked += len(ours)
		for i := 1; i < len(ours); i++ {
			prev, next := ours[i-1], ours[i]
			if prev.EndedAt == nil || prev.EndedAt.After(next.StartedAt) {
				iv.fail("sled %d: %s update %s (%s) still in flight when %s update %s started", c, prev.Component, prev.UpdateID,
					prev.Outcome, next.Component, next.UpdateID)
			}
		}
	}
}

// checkDeliveredOnce: one delivery per attempt ID on the SPs, and one
// completed install per server and image in the datacenter.
func checkDeliveredOnce(e *evidence, iv *invariant) {
	count := map[uuid.UUID]int{}
	where := map[uuid.UUID]string{}
	for c, sp := range spByCubby(e.after) {
		for _, d := range sp.Deliveries {
			if d.Foreign {
				continue
			}
			iv.Checked++
			count[d.UpdateID]++
			where[d.UpdateID] = fmt.Sprintf("sled %d %s", c, d.Component)
		}
	}
	for id, n := range count {
		if n > 1 {
			iv.fail("attempt %s delivered %d times (%s)", id, n, where[id])
		}
	}
	installs := map[string]int{}
	for _, rec := range e.after.DC.Installs {
		iv.Checked++
		if rec.Outcome == "complete" {
			installs[rec.ServerUUID.String()+" "+rec.ImageUUID.String()]++
		}
	}
	for k, n := range installs {
		if n > 1 {
			iv.fail("server/image %s installed %d times", k, n)
		}
	}
}

// checkSagas: no running saga left with a stopped Nexus, none claimed or
// finished twice, and none moved before its Nexus was proven gone.
func checkSagas(e *evidence, iv *invariant) {
	type nexus struct {
		running bool
		stopped *time.Time
		created int64
	}
	nx := map[uuid.UUID]nexus{}
	var created int64
	for _, n := range e.after.Sled.Nexus {
		nx[n.ZoneID] = nexus{running: n.Running, stopped: n.StoppedAt, created: n.SagasCreated}
		created += n.SagasCreated
	}
	iv.Checked++
	if int64(len(e.sagas)) < created {
		iv.fail("Nexus instances created %d sagas but the table holds %d", created, len(e.sagas))
	}
	for _, s := range e.sagas {
		iv.Checked++
		if s.State == "running" && s.Sec != nil {
			if n, ok := nx[*s.Sec]; !ok || !n.running {
				iv.fail("saga %s is running on Nexus %s, which is gone: lost", s.ID, s.Sec)
			}
		}
		claims, finishes := 0, 0
		adopters := map[int64]map[uuid.UUID]bool{}
		for _, h := range s.History {
			switch h.Event {
			case "claim":
				claims++
			case "finish":
				finishes++
			case "adopt":
				if adopters[h.AdoptGen] == nil {
					adopters[h.AdoptGen] = map[uuid.UUID]bool{}
				}
				adopters[h.AdoptGen][h.Sec] = true
			}
		}
		if claims > 1 || finishes > 1 {
			iv.fail("saga %s claimed %d times, finished %d times: duplicated", s.ID, claims, finishes)
		}
		for gen, secs := range adopters {
			if len(secs) > 1 {
				iv.fail("saga %s adopted by %d Nexus instances at generation %d: duplicated", s.ID, len(secs), gen)
			}
		}
		if s.AdoptTime == nil || s.AdoptGen < 2 {
			continue
		}
		// The owner before the last move: the claim or adoption of the
		// previous generation.
		var prev *sagaEvent
		for i := range s.History {
			h := &s.History[i]
			if (h.Event == "claim" || h.Event == "adopt") && h.AdoptGen == s.AdoptGen-1 {
				prev = h
			}
		}
		if prev == nil {
			continue
		}
		n := nx[prev.Sec]
		switch {
		case n.running:
			iv.fail("saga %s moved at %s from Nexus %s, which is still running", s.ID, s.AdoptTime.Format(time.RFC3339Nano), prev.Sec)
		case n.stopped != nil && n.stopped.After(s.AdoptTime.Add(100*time.Millisecond)):
			iv.fail("saga %s moved at %s from Nexus %s, which stopped only at %s", s.ID, s.AdoptTime.Format(time.RFC3339Nano),
				prev.Sec, n.stopped.Format(time.RFC3339Nano))
		}
		for _, h := range s.History {
			if h.Sec == prev.Sec && h.At.After(*s.AdoptTime) {
				iv.fail("saga %s: Nexus %s still acted on it (%s) after it was moved", s.ID, prev.Sec, h.Event)
			}
		}
	}
}

// checkSAPIIntent: every SAPI instance the run moved points at the image
// the server actually runs.
func checkSAPIIntent(e *evidence, iv *invariant) {
	wasIntent := map[uuid.UUID]uuid.UUID{}
	for _, s := range e.before.DC.Servers {
		for _, in := range s.Instances {
			wasIntent[in.UUID] = in.ImageUUID
		}
	}
	for _, s := range e.after.DC.Servers {
		actual := agentsByName(s.Agents)
		for _, in := range s.Instances {
			iv.Checked++
			if in.ImageUUID == wasIntent[in.UUID] {
				continue // not moved by this run
			}
			ag, ok := actual[in.Service]
			if !ok || ag.ImageUUID != in.ImageUUID {
				iv.fail("server %s (%s): SAPI intent for %s is %s but the server runs %s", s.UUID, s.Hostname, in.Service,
					short(in.ImageUUID.String()), short(ag.ImageUUID.String()))
			}
		}
	}
}

// checkCanaryRollback: a bump whose canary failed (or that was cancelled)
// restores every MachineSet's image and replicas.
func checkCanaryRollback(e *evidence, iv *invariant) {
	for _, name := range e.expect.clusters {
		a := e.latest(workflows.KindBootImageBump, "cluster/"+name)
		rolledBack := a != nil && (strings.HasPrefix(a.Outcome, "CanaryFailed") || strings.HasPrefix(a.Outcome, "Cancelled"))
		if e.expect.canaryFailed[name] {
			iv.Checked++
			if a != nil && a.State == "completed" {
				iv.fail("cluster/%s: its canary could not boot, yet the bump completed (%s)", name, a.Outcome)
			}
		}
		if !rolledBack {
			continue
		}
		was, now := e.before.Machine.Clusters[name], e.after.Machine.Clusters[name]
		for ms, before := range was.MachineSets {
			iv.Checked++
			after := now.MachineSets[ms]
			if after.Image != before.Image {
				iv.fail("cluster/%s: %s left on %s after the rollback (was %s)", name, ms, after.Image, before.Image)
			}
			if after.Replicas != before.Replicas {
				iv.fail("cluster/%s: %s left at %d replicas after the rollback (was %d)", name, ms, after.Replicas, before.Replicas)
			}
		}
	}
}
