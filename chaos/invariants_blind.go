package chaos

import (
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// The blind-spot invariants: the blind spots a cancel, a
// terminate, two Nexus expunges at once or a duplicate start could hide.

// checkBlockedTargets: every active ledger attempt belongs to a workflow
// run that is still running; an attempt left active by a closed run would
// refuse every later update of its target (TargetBusy forever).
func checkBlockedTargets(e *evidence, iv *invariant) {
	iv.Checked += e.blocked.checked
	for _, v := range e.blocked.blocked {
		iv.fail("%s", v)
	}
	runs := map[string]*wf{}
	latest := map[string]*wf{}
	for _, w := range e.workflows {
		runs[w.ID+"/"+w.RunID] = w
		if l := latest[w.ID]; l == nil || w.Start.After(l.Start) {
			latest[w.ID] = w
		}
	}
	for _, a := range e.attempts {
		if terminal(a.State) {
			continue
		}
		iv.Checked++
		w := runs[a.WorkflowID+"/"+a.RunID]
		switch {
		case w == nil && latest[a.WorkflowID] == nil:
			iv.fail("%s is blocked by attempt %d (%s), whose workflow %s Temporal does not know", a.Target, a.Attempt, a.State, a.WorkflowID)
		case w == nil:
			if l := latest[a.WorkflowID]; l.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				iv.fail("%s is blocked by attempt %d (%s) of %s, whose latest run is closed (%s)", a.Target, a.Attempt, a.State,
					a.WorkflowID, l.Status)
			}
		case w.Status != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			iv.fail("%s is blocked by attempt %d (%s) of %s, whose run %s is closed (%s)", a.Target, a.Attempt, a.State,
				a.WorkflowID, short(a.RunID), w.Status)
		}
	}
}

// checkSagaOwners: no saga still running or unwinding has an expunged
// Nexus as its current SEC (nobody would ever finish it). Expunged is
// what the ledger records (zone_disposition) of a Nexus that no longer
// runs: an expunge cancelled before the zone's removal keeps its recorded
// disposition (running it again resumes it) while the Nexus still runs and
// finishes its own sagas. Checked are the sagas an expunged Nexus ever
// owned (so it counts what the expunges had to move, even when all of it
// moved and finished).
func checkSagaOwners(e *evidence, iv *invariant) {
	running := map[uuid.UUID]bool{}
	for _, n := range e.after.Sled.Nexus {
		running[n.ZoneID] = n.Running
	}
	gone := func(sec uuid.UUID) bool { return e.expunged[sec] != "" && !running[sec] }
	for _, s := range e.sagas {
		owned := s.Sec != nil && gone(*s.Sec)
		for _, h := range s.History {
			owned = owned || gone(h.Sec)
		}
		if !owned {
			continue
		}
		iv.Checked++
		if s.State == "done" || s.State == "abandoned" || s.Sec == nil {
			continue
		}
		if gone(*s.Sec) {
			iv.fail("saga %s (%s) is owned by Nexus %s, which the ledger records expunged (%s)", s.ID, s.State, s.Sec, e.expunged[*s.Sec])
		}
	}
}

// cancelled: the attempt ended by a cancellation.
func cancelled(a *attempt) bool {
	return a != nil && (a.State == "cancelled" || strings.HasPrefix(a.Outcome, "Cancelled"))
}

// checkCancelledBumps: when a cluster's last bump attempt was cancelled,
// every MachineSet is back on the image and replica count it had before
// the run (the bump records no other original: fleetsim's truth at the
// start is the original).
func checkCancelledBumps(e *evidence, iv *invariant) {
	var clusters []string
	for name := range e.before.Machine.Clusters {
		clusters = append(clusters, name)
	}
	sort.Strings(clusters)
	for _, name := range clusters {
		a := e.latest(workflows.KindBootImageBump, "cluster/"+name)
		if !cancelled(a) {
			continue
		}
		was, now := e.before.Machine.Clusters[name], e.after.Machine.Clusters[name]
		for ms, before := range was.MachineSets {
			iv.Checked++
			after := now.MachineSets[ms]
			if after.Image != before.Image || after.Replicas != before.Replicas {
				iv.fail("cluster/%s: bump cancelled (attempt %d, %s) but %s is left on %s × %d (was %s × %d)", name, a.Attempt, a.State,
					ms, after.Image, after.Replicas, before.Image, before.Replicas)
			}
		}
	}
}

// checkDeviceActionsOnce counts device actions from fleetsim's truth
// against the ledger's attempts: an SP finishes at most one delivery of
// ours per attempt ID and component (installs per server and image are
// counted by checkDeliveredOnce), and a bump changes a MachineSet's image at most twice per attempt (the
// patch and its rollback) plus once per revert by the other actor.
func checkDeviceActionsOnce(e *evidence, iv *invariant) {
	for c, sp := range spByCubby(e.after) {
		done := map[string]int{}
		for _, d := range sp.Deliveries {
			if d.Foreign || d.Outcome != "complete" {
				continue
			}
			iv.Checked++
			done[d.UpdateID.String()+" "+d.Component]++
		}
		for k, n := range done {
			if n > 1 {
				iv.fail("sled %d: attempt/component %s completed %d deliveries", c, k, n)
			}
		}
	}
	for name, now := range e.after.Machine.Clusters {
		was := e.before.Machine.Clusters[name]
		bumps := len(e.byTarget["cluster/"+name])
		for ms, st := range now.MachineSets {
			iv.Checked++
			patches := st.ImagePatches - was.MachineSets[ms].ImagePatches
			reverts := st.Reverts - was.MachineSets[ms].Reverts
			if patches > 2*bumps+reverts {
				iv.fail("cluster/%s: %s image patched %d times by %d bump attempt(s) with %d revert(s)", name, ms, patches, bumps, reverts)
			}
		}
	}
}

// checkDuplicateStart: of two starters run at once for one update, one
// started it and the other attached to that run (exit 0) or was refused
// (exit 5); Temporal holds exactly one run of it.
func checkDuplicateStart(e *evidence, iv *invariant) {
	for _, r := range e.restarts {
		iv.Checked++
		if strings.Contains(r.Err, "TargetBusy") || strings.Contains(r.Err, "refused") {
			iv.fail("%s started again after a terminate was refused: %s", r.ID, r.Err)
		}
	}
	d := e.dup
	if d == nil {
		return
	}
	iv.Checked++
	runs := 0
	for _, w := range e.workflows {
		if w.ID == d.ID {
			runs++
		}
	}
	if runs != 1 {
		iv.fail("%s: %d runs after two concurrent starters (%s)", d.ID, runs, d)
	}
	var res [2]starterResult
	for i, code := range d.Exits {
		switch code {
		case 0:
			r, ok := parseStarter(d.Out[i])
			if !ok {
				iv.fail("%s: starter %d exited 0 without naming the run (%s)", d.ID, i+1, d)
			}
			res[i] = r
		case 5:
		default:
			iv.fail("%s: starter %d exited %d (want 0 or 5): %s", d.ID, i+1, code, d)
		}
	}
	switch {
	case d.Exits[0] == 5 && d.Exits[1] == 5:
		iv.fail("%s: both concurrent starters were refused (%s)", d.ID, d)
	case d.Exits[0] == 0 && d.Exits[1] == 0:
		if res[0].Attached == res[1].Attached {
			iv.fail("%s: both starters say attached=%v (%s)", d.ID, res[0].Attached, d)
		}
		if res[0].RunID != res[1].RunID {
			iv.fail("%s: the starters name different runs %s and %s", d.ID, res[0].RunID, res[1].RunID)
		}
	}
}

// madeByReset: runID is the run a chaos reset made (it continues an update
// begun before; the build it runs on is the reset's, not a new start's).
func madeByReset(rs []resetRun, runID string) bool {
	for _, r := range rs {
		if r.NewRunID == runID {
			return true
		}
	}
	return false
}

// checkNewBuild: after a new build became current, the rollout (an
// Auto-Upgrade parent) ends on it, and every update started from then on
// runs on it; updates started before stay pinned to the build they began
// on (and must still end: checkTerminal). The build is the one that
// completed the run's last workflow task.
func checkNewBuild(e *evidence, iv *invariant) {
	if e.newBuildAt.IsZero() {
		return
	}
	// A start or task within a moment of the switch may have raced it (the
	// routing change reaches the task queue's partitions asynchronously).
	const slack = 2 * time.Second
	settled := e.newBuildAt.Add(slack)
	for _, w := range e.workflows {
		switch {
		case w.ID == e.rolloutID && w.BuildTaskAt.After(settled):
			iv.Checked++
			if w.Build != newBuild.BuildID {
				iv.fail("rollout %s is on build %q after %s became current", w.ID, w.Build, newBuild.BuildID)
			}
		case w.ID == e.rolloutID:
			// Its last workflow task came before the switch settled (a
			// rollout that ended right after it): nothing to move on.
		case w.Build == "":
			// It completed no workflow task (terminated or failed at its
			// first): it ran on no build; checkTerminal sees its end.
		case w.Start.After(settled) && !madeByReset(e.resetRuns, w.RunID):
			iv.Checked++
			if w.Build != newBuild.BuildID {
				iv.fail("%s started after %s became current but ran on build %q", w.ID, newBuild.BuildID, w.Build)
			}
		}
	}
}
