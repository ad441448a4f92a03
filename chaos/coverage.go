package chaos

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// Coverage: a run passes only if it exercised what it
// claims. Each attack kind the schedule promised must have fired at least
// once (a fault: fleetsim counted it firing), and each invariant that
// applies to the run must have examined something.

// coverageRow is one attack kind: how many the schedule promised, how
// many landed.
type coverageRow struct {
	Attack    string `json:"attack"`
	Scheduled int    `json:"scheduled"`
	Fired     int    `json:"fired"`
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// armedFaults is what the run armed and what fleetsim says of it at the end.
type armedFaults struct {
	ids       map[int]faults.Kind // every fault armed, by fleetsim's ID
	withdrawn map[int]bool        // taken back unfired (armed again elsewhere)
	left      []faults.Fault      // still armed at the end (GET /faults)
}

// firedByKind counts the faults of each kind that fired at least once: a
// fault disarms when its Times are used up, so one no longer listed fired.
func (a armedFaults) firedByKind() map[faults.Kind]int {
	left := map[int]faults.Fault{}
	for _, f := range a.left {
		left[f.ID] = f
	}
	out := map[faults.Kind]int{}
	for id, k := range a.ids {
		if a.withdrawn[id] {
			continue
		}
		if f, still := left[id]; !still || f.Fired > 0 {
			out[k]++
		}
	}
	return out
}

// coverage lists every attack kind of the run with what it scheduled and
// what fired.
func (r *Report) coverage(a armedFaults) []coverageRow {
	c := r.cfg
	rows := []coverageRow{
		{"worker SIGKILL", c.Kills, r.Kills},
		{"worker SIGTERM, restarted", c.GracefulRestarts, r.GracefulRestarts},
		{"PostgreSQL restart", b2i(c.RestartPostgres), r.PostgresRestarts},
		{"Temporal restart", b2i(c.RestartTemporal), r.TemporalRestarts},
		{"PostgreSQL blip during SP/host starts", c.PGBlips, r.PGBlips},
		{"cancel a running child", c.Cancels, r.Cancels},
		{"terminate a child, start it again", c.TerminateRestarts, r.TerminateRestarts},
		{"two starters at once", b2i(c.DuplicateStarts && r.expect.dupZone != [16]byte{}), r.DuplicateStarts},
		{"new worker build mid-rollout", b2i(c.NewBuild), r.NewBuilds},
	}
	for _, p := range resetPoints {
		rows = append(rows, coverageRow{p.attackName(), r.ResetsPlanned[string(p)], r.Resets[string(p)]})
	}
	fired := a.firedByKind()
	var kinds []string
	for k := range r.FaultKinds {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		rows = append(rows, coverageRow{"fault " + k, r.FaultKinds[faults.Kind(k)], fired[faults.Kind(k)]})
	}
	return rows
}

// Uncovered says what the run promised but never exercised: an attack
// kind scheduled that never fired, an invariant that applies and checked
// nothing ("" when everything was covered).
func (r *Report) Uncovered() string {
	var miss []string
	for _, row := range r.Coverage {
		if row.Scheduled > 0 && row.Fired == 0 {
			miss = append(miss, fmt.Sprintf("%s never fired (%d scheduled)", row.Attack, row.Scheduled))
		}
	}
	for _, iv := range r.Invariants {
		if iv.Applies && iv.Checked == 0 {
			miss = append(miss, fmt.Sprintf("invariant %q applies but checked nothing", iv.Name))
		}
	}
	return strings.Join(miss, "; ")
}

// The invariants' preconditions: an invariant applies when the run did
// what it is about, and must then have examined something.

func always(*evidence) bool { return true }

func hasSPs(e *evidence) bool { return len(e.expect.spSleds)+len(e.expect.hostSleds) > 0 }

func hasDevices(e *evidence) bool { return hasSPs(e) || e.expect.servers > 0 }

func hasNexusExpunges(e *evidence) bool { return len(e.expect.nexusZones) > 0 }

func hasAgents(e *evidence) bool { return len(e.expect.agents) > 0 && e.expect.servers > 0 }

func hasFailingCanary(e *evidence) bool { return len(e.expect.canaryFailed) > 0 }

// expungedNexus: a Nexus the ledger records expunged no longer runs: its
// sagas had to move.
func expungedNexus(e *evidence) bool {
	for _, n := range e.after.Sled.Nexus {
		if !n.Running && e.expunged[n.ZoneID] == "nexus" {
			return true
		}
	}
	return false
}

func hasCancelledBump(e *evidence) bool {
	for _, name := range e.expect.clusters {
		if cancelled(e.latest(workflows.KindBootImageBump, "cluster/"+name)) {
			return true
		}
	}
	return false
}

func hasDeviceActions(e *evidence) bool {
	return len(e.expect.spSleds) > 0 || len(e.expect.clusters) > 0
}

func hasRestartsOrDup(e *evidence) bool { return len(e.restarts) > 0 || e.dup != nil }

func hasNewBuild(e *evidence) bool { return !e.newBuildAt.IsZero() }
