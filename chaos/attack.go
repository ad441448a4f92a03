package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
	"github.com/fleetsaga/fleetsaga/internal/devstack"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// harness runs the chaos against one stack.
type harness struct {
	cfg   Config
	stack *devstack.Stack
	c     client.Client
	obs   *observer
	out   io.Writer
	log   zerolog.Logger
	rng   *rand.Rand
	// started is when the rollout started.
	started time.Time
	// rolloutID and stages are the rollout's workflow ID and stage names.
	rolloutID string
	stages    []string
	stageKind []workflows.Kind
	// brng drives the blind-spot attacks (its own stream, so the kill
	// and fault schedule of a seed stays what it was).
	brng *rand.Rand
	// grng drives the graceful restarts' timing (its own stream too);
	// stopping is the worker being restarted gracefully (-1: none).
	grng     *rand.Rand
	stopping int
	blind    *blindState
	newBuild *newBuildState
	api      *apiAim
	// stageNow is the stage index the last tick saw running (the blip
	// watcher reads it).
	stageNow atomic.Int32
	// faultIDs are fleetsim's IDs of every fault armed, by kind;
	// withdrawn those taken back to be armed again elsewhere.
	faultIDs  map[int]faults.Kind
	withdrawn map[int]bool
	// blocked is invariant 8 as sampled during the run.
	blocked blockedSamples

	// mu serialises changes to the stack (kills, restarts, supervision)
	// and guards the report's counters.
	mu  sync.Mutex
	rep *Report
}

func (h *harness) say(format string, args ...any) {
	fmt.Fprintf(h.out, "chaos: "+format+"\n", args...)
}

// supervise restarts workers that exited by themselves (a worker started
// while PostgreSQL or Temporal was down gives up and exits).
func (h *harness) supervise(ctx context.Context, done <-chan struct{}) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			h.reviveAll()
			return
		case <-t.C:
			h.reviveAll()
		}
	}
}

func (h *harness) reviveAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.stack.Workers {
		if i != h.stopping && h.stack.WorkerExited(i) {
			if err := h.stack.StartWorker(i); err != nil {
				h.say("restart exited worker-%d: %v", i, err)
				continue
			}
			h.rep.WorkerRevivals++
		}
	}
}

// attack is the chaos schedule: a worker SIGKILL every KillGap until the
// rollout ends (three times slower after twice the minimum), PostgreSQL
// and Temporal each restarted once during a seeded stage of the rollout,
// and API faults
// armed along the way, a share in each stage, aimed at the APIs that stage
// uses (attack_aim.go). After each tick's attacks the ledger's active
// attempts are checked against Temporal (invariant 8, during the run).
func (h *harness) attack(ctx context.Context, done <-chan struct{}) {
	k := max(h.cfg.Kills, 3)
	pgStage, tmStage := -1, -1
	if h.cfg.RestartPostgres {
		pgStage = h.restartStage()
	}
	if h.cfg.RestartTemporal {
		tmStage = h.restartStage()
	}
	h.api = newAPIAim(h.rng, len(h.stages), h.cfg.APIFaults)
	stage := 0
	for n := 1; ; n++ {
		gap := h.cfg.KillGap[0] + time.Duration(h.rng.Int63n(int64(h.cfg.KillGap[1]-h.cfg.KillGap[0])+1))
		if n > 2*k && pgStage < 0 && tmStage < 0 {
			gap *= 3
		}
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-time.After(gap):
		}
		victim := h.rng.Intn(len(h.stack.Workers))
		pick := h.rng.Int63()
		h.kill(victim)
		phase := ""
		if p, err := h.progress(ctx, h.rolloutID); err == nil {
			phase = string(p.Phase)
			for i, name := range h.stages {
				if phase == string(workflows.PhaseRunningStage) && p.Message == "stage "+name {
					stage = i
				}
			}
		}
		h.stageNow.Store(int32(stage))
		if pgStage >= 0 && stage >= pgStage {
			h.restartPostgres(ctx, phase)
			pgStage = -1
		}
		if tmStage >= 0 && stage >= tmStage {
			h.restartTemporal(ctx, phase)
			tmStage = -1
		}
		if nb := h.newBuild; nb.stage >= 0 && stage >= nb.stage {
			h.deployNewBuild(ctx, phase)
			nb.stage = -1
		}
		h.aimTick(ctx, stage, rand.New(rand.NewSource(pick)))
		h.sampleBlocked(ctx)
	}
}

// restartStage picks the stage during which a restart happens (not the
// drift check, which takes no time, nor the last stage, which may end
// before the next chaos tick).
func (h *harness) restartStage() int {
	var cands []int
	for i, name := range h.stages {
		if name != "agent-drift" && i < len(h.stages)-1 {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return 0
	}
	return cands[h.rng.Intn(len(cands))]
}

func (h *harness) kill(i int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i == h.stopping {
		i = (i + 1) % len(h.stack.Workers) // it is stopping gracefully
	}
	if err := h.stack.RestartWorker(i); err != nil {
		h.say("SIGKILL + restart worker-%d: %v", i, err)
		return
	}
	h.rep.Kills++
	h.log.Info().Int("worker", i).Int("kills", h.rep.Kills).Msg("SIGKILLed and restarted a worker")
}

func (h *harness) restartPostgres(ctx context.Context, during string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t0 := time.Now()
	if err := h.stack.PG.Restart(ctx); err != nil {
		h.say("restart PostgreSQL: %v", err)
		return
	}
	h.rep.PostgresRestarts++
	h.say("PostgreSQL restarted during %q (%s)", during, time.Since(t0).Round(time.Millisecond))
}

func (h *harness) restartTemporal(ctx context.Context, during string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t0 := time.Now()
	if err := h.stack.RestartTemporal(ctx); err != nil {
		h.say("restart Temporal: %v", err)
		return
	}
	h.rep.TemporalRestarts++
	h.say("Temporal restarted (history and visibility kept: %s) during %q (%s)", h.temporalStore(), during, time.Since(t0).Round(time.Millisecond))
}

// armFault arms f through fleetsim's fault endpoint and counts it as an
// attack of its kind.
func (h *harness) armFault(ctx context.Context, f faults.Fault) error {
	id, err := h.postFault(ctx, f)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.rep.FaultsArmed++
	h.rep.FaultKinds[f.Kind]++
	h.faultIDs[id] = f.Kind
	h.mu.Unlock()
	h.log.Info().Str("kind", string(f.Kind)).Str("target", f.Target).Msg("fault armed")
	return nil
}

// postFault arms f and returns fleetsim's ID for it.
func (h *harness) postFault(ctx context.Context, f faults.Fault) (int, error) {
	b, err := json.Marshal(f)
	if err != nil {
		return 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, h.stack.FleetsimURL+"/faults", bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusCreated {
		return 0, fmt.Errorf("fleetsim refused fault %s on %s: %s %s", f.Kind, f.Target, resp.Status, body)
	}
	var created struct {
		ID int `json:"id"`
	}
	if err := json.Unmarshal(body, &created); err != nil || created.ID == 0 {
		return 0, fmt.Errorf("fleetsim armed fault %s on %s but named no ID: %s", f.Kind, f.Target, body)
	}
	return created.ID, nil
}

// withdrawFault disarms fault id (one that never fired, to arm it again
// where it can).
func (h *harness) withdrawFault(ctx context.Context, id int) error {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodDelete, fmt.Sprintf("%s/faults/%d", h.stack.FleetsimURL, id), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotFound {
		return fmt.Errorf("fleetsim: DELETE /faults/%d: %s", id, resp.Status)
	}
	return nil
}

// temporalStore says where the restarted Temporal keeps its state.
func (h *harness) temporalStore() string {
	if h.cfg.Temporal == devstack.TemporalCluster {
		return "the real server, in PostgreSQL"
	}
	return "the dev server, in its database file"
}
