package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/kinds"
	"github.com/fleetsaga/fleetsaga/kinds/zoneexpunge"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// The blind-spot attacks, aimed at the stage running:
// a running child cancelled (at most one per kind), a running child
// terminated and started again under the same ID and input, and the real
// starter run twice at once for one extra zone expunge (at the first chaos
// tick). A cancel or terminate fires at the first chaos tick at or after
// its seeded stage, so the moment within the stage is random.

// blindState is what the blind-spot attacks did, for the invariants.
type blindState struct {
	cancelStages, terminateStages map[int]bool
	cancelledKinds                map[workflows.Kind]bool
	// terminated are the runs we terminated (their TERMINATED status is
	// ours, not the product's); restarted are the fresh runs.
	terminated map[string]bool
	// cancelled are the runs we cancelled: never terminated as well (that
	// would cut their compensation short, our doing, not the product's).
	cancelled map[string]bool
	restarted []restartedRun
	dup       *dupStart
	dupDone   bool
	// resets are the resets still owed; reset the workflow IDs reset
	// (never twice); resetRuns what each reset did.
	resets    []plannedReset
	reset     map[string]bool
	resetRuns []resetRun
}

type restartedRun struct{ ID, RunID string }

// dupStart is the outcome of the two concurrent starters.
type dupStart struct {
	ID    string
	Exits [2]int
	Out   [2]string
}

func (h *harness) planBlind() {
	h.blind = &blindState{cancelStages: map[int]bool{}, terminateStages: map[int]bool{}, cancelledKinds: map[workflows.Kind]bool{},
		terminated: map[string]bool{}, cancelled: map[string]bool{}, reset: map[string]bool{}}
	// Distinct stages for cancels and terminates while there are enough.
	order := h.brng.Perm(len(h.stages))
	for n := 0; n < h.cfg.Cancels && len(order) > 0; n++ {
		h.blind.cancelStages[order[n%len(order)]] = true
	}
	for n := 0; n < h.cfg.TerminateRestarts && len(order) > 0; n++ {
		h.blind.terminateStages[order[(h.cfg.Cancels+n)%len(order)]] = true
	}
	h.blind.resets = planResets(h.brng, len(h.stages), h.cfg.Resets)
	if h.cfg.ResetsFirstStage {
		for i := range h.blind.resets {
			h.blind.resets[i].stage = 0
		}
	}
}

// blindTick runs the blind-spot attacks due at this tick (stage: the stage
// index running).
func (h *harness) blindTick(ctx context.Context, stage int) {
	b := h.blind
	// The duplicate starters go first, at the first tick: their update is
	// outside the plan and must not depend on catching a stage.
	if h.cfg.DuplicateStarts && !b.dupDone && h.rep.expect.dupZone != [16]byte{} {
		b.dupDone = true
		h.duplicateStart(ctx)
	}
	for i := range h.stages {
		if b.cancelStages[i] && stage >= i {
			if h.cancelChild(ctx, h.stageKind[stage]) {
				delete(b.cancelStages, i)
				return // one attack on the children per tick
			}
			break
		}
	}
	for i := range h.stages {
		if b.terminateStages[i] && stage >= i {
			if h.terminateRestart(ctx, h.stageKind[stage]) {
				delete(b.terminateStages, i)
			}
			break
		}
	}
}

// runningChild picks (seeded) a running child of the plan of kind k that
// no attack hit yet. midUpdate (a reset) wants its ledger attempt active.
// spare (a cancel, which ends the update for good) leaves alone a child
// whose device faults have not fired yet, since the cancel could keep that
// fault kind from ever firing; a reset run and a terminated update started
// again go on with the update, so their faults still fire.
func (h *harness) runningChild(ctx context.Context, k workflows.Kind, midUpdate, spare bool) (*wf, plannedUpdate, bool) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ws, err := h.obs.list(lctx, `ExecutionStatus = "Running"`)
	if err != nil {
		return nil, plannedUpdate{}, false
	}
	armed, err := h.obs.armedFaults(lctx)
	if err != nil {
		return nil, plannedUpdate{}, false
	}
	var active map[string]bool
	if midUpdate {
		if active, err = h.obs.activeAttemptWorkflows(lctx); err != nil {
			return nil, plannedUpdate{}, false
		}
	}
	var cands []*wf
	for _, w := range ws {
		p, ok := h.rep.expect.planned[w.ID]
		// A reset child may still be cancelled or terminated (its new run is
		// an update like any other), but is not reset twice.
		if !ok || p.Kind != k || h.blind.terminated[w.RunID] || h.blind.cancelled[w.RunID] || (midUpdate && h.blind.reset[w.ID]) {
			continue
		}
		if (spare && unfiredFaultOn(armed, faultScope(k, p.Target))) || (midUpdate && !active[w.ID]) {
			continue
		}
		cands = append(cands, w)
	}
	if len(cands) == 0 {
		return nil, plannedUpdate{}, false
	}
	w := cands[h.brng.Intn(len(cands))]
	return w, h.rep.expect.planned[w.ID], true
}

// cancelChild cancels a running child of kind k (once per kind): it must
// run its compensations and end cancelled, its target consistent.
func (h *harness) cancelChild(ctx context.Context, k workflows.Kind) bool {
	if h.blind.cancelledKinds[k] || h.cfg.NoCancel[k] {
		return false
	}
	w, _, ok := h.runningChild(ctx, k, false, true)
	if !ok {
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := h.c.CancelWorkflow(cctx, w.ID, w.RunID); err != nil {
		h.say("cancel %s: %v", w.ID, err)
		return false
	}
	h.blind.cancelledKinds[k] = true
	h.blind.cancelled[w.RunID] = true
	h.mu.Lock()
	h.rep.Cancels++
	h.mu.Unlock()
	h.say("cancelled %s (run %s)", w.ID, short(w.RunID))
	return true
}

// terminateRestart terminates a running child of kind k and starts the
// same update again under its workflow ID with the same input, as an
// operator would: the fresh run must not be refused by the dead run's
// attempt.
func (h *harness) terminateRestart(ctx context.Context, k workflows.Kind) bool {
	w, p, ok := h.runningChild(ctx, k, false, false)
	if !ok {
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := h.c.TerminateWorkflow(cctx, w.ID, w.RunID, "chaos: terminated, to be started again"); err != nil {
		h.say("terminate %s: %v", w.ID, err)
		return false
	}
	h.blind.terminated[w.RunID] = true
	arg, err := typedInput(kinds.Kinds[p.Kind].Workflow, p.Input)
	if err != nil {
		h.say("decode the input of %s: %v", w.ID, err)
		return true
	}
	run, err := h.c.ExecuteWorkflow(cctx, client.StartWorkflowOptions{
		ID: w.ID, TaskQueue: workflows.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: workflows.StartAttributes(p.Kind, p.Target, p.Artifact),
		StaticSummary:         "chaos: started again after a terminate",
	}, kinds.Kinds[p.Kind].Workflow, arg)
	if err != nil {
		h.say("start %s again after terminating it: %v", w.ID, err)
		h.blind.restarted = append(h.blind.restarted, restartedRun{ID: w.ID})
	} else {
		h.blind.restarted = append(h.blind.restarted, restartedRun{ID: w.ID, RunID: run.GetRunID()})
	}
	h.mu.Lock()
	h.rep.TerminateRestarts++
	h.mu.Unlock()
	h.say("terminated %s (run %s) and started it again", w.ID, short(w.RunID))
	return true
}

// typedInput decodes a plan update's raw input into the workflow
// function's input type (the client checks argument types; the rollout's
// child start does not).
func typedInput(fn any, raw json.RawMessage) (any, error) {
	t := reflect.TypeOf(fn)
	if t.Kind() != reflect.Func || t.NumIn() != 2 {
		return nil, fmt.Errorf("workflow %T does not take (ctx, input)", fn)
	}
	v := reflect.New(t.In(1))
	if err := json.Unmarshal(raw, v.Interface()); err != nil {
		return nil, err
	}
	return v.Elem().Interface(), nil
}

// duplicateStart runs the real starter twice at once for the extra zone
// expunge: one must start it, the other attach (exit 0) or be refused
// (exit 5); exactly one workflow may run.
func (h *harness) duplicateStart(ctx context.Context) {
	e := h.rep.expect
	target := zoneexpunge.ZoneExpungeTarget(e.dupZone)
	d := &dupStart{ID: workflows.WorkflowID(workflows.KindZoneExpunge, target)}
	// Each starter prechecks first, as an operator's does: a start whose
	// identical twin began during its precheck attaches to that run, even
	// one that already ended (the starter's startedMeanwhile).
	args := []string{"--json", "zone-expunge", "--sled", e.dupSled.String(), "--zone", e.dupZone.String(),
		"--put-timeout", "3m", "--retry-initial", "200ms", "--retry-max", "2s", "--poll-interval", "200ms", "--proof-timeout", "2m"}
	done := make(chan int, 2)
	for i := 0; i < 2; i++ {
		go func(i int) {
			rctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			cmd := exec.CommandContext(rctx, filepath.Join(h.cfg.BinDir, "starter"), args...)
			cmd.Env = append(cmd.Environ(), h.stack.Env()...)
			out, err := cmd.CombinedOutput()
			d.Out[i] = strings.TrimSpace(string(out))
			var ee *exec.ExitError
			switch {
			case err == nil:
			case errors.As(err, &ee):
				d.Exits[i] = ee.ExitCode()
			default:
				d.Exits[i], d.Out[i] = -1, err.Error()
			}
			done <- i
		}(i)
	}
	<-done
	<-done
	h.blind.dup = d
	h.mu.Lock()
	h.rep.DuplicateStarts++
	h.mu.Unlock()
	h.say("two starters at once for %s: exits %d and %d", d.ID, d.Exits[0], d.Exits[1])
}

// restartOutcomes reads how each fresh run after a terminate ended.
func (h *harness) restartOutcomes(ctx context.Context) []restartOutcome {
	var out []restartOutcome
	for _, r := range h.blind.restarted {
		o := restartOutcome{ID: r.ID, RunID: r.RunID}
		if r.RunID == "" {
			o.Err = "the fresh start was refused by Temporal"
			out = append(out, o)
			continue
		}
		gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var res json.RawMessage
		if err := h.c.GetWorkflow(gctx, r.ID, r.RunID).Get(gctx, &res); err != nil {
			o.Err = err.Error()
		}
		cancel()
		out = append(out, o)
	}
	return out
}

// restartOutcome is how a fresh run after a terminate ended ("" = completed).
type restartOutcome struct{ ID, RunID, Err string }

// startResult is what `starter --json` prints for a start.
type starterResult struct {
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId"`
	Attached   bool   `json:"attached"`
}

func parseStarter(out string) (starterResult, bool) {
	var r starterResult
	i := strings.Index(out, "{")
	if i < 0 {
		return r, false
	}
	err := json.NewDecoder(strings.NewReader(out[i:])).Decode(&r)
	return r, err == nil && r.WorkflowID != ""
}

func (d *dupStart) String() string {
	return fmt.Sprintf("exits %d/%d (%q, %q)", d.Exits[0], d.Exits[1], d.Out[0], d.Out[1])
}
