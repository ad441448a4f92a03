package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"sync"
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
	brng     *rand.Rand
	blind    *blindState
	newBuild *newBuildState

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
		if h.stack.WorkerExited(i) {
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
// and API faults armed along the way, a share in each stage, aimed at the
// APIs that stage uses.
func (h *harness) attack(ctx context.Context, done <-chan struct{}) {
	k := max(h.cfg.Kills, 3)
	pgStage, tmStage := -1, -1
	if h.cfg.RestartPostgres {
		pgStage = h.restartStage()
	}
	if h.cfg.RestartTemporal {
		tmStage = h.restartStage()
	}
	quota := (h.cfg.APIFaults + len(h.stages) - 1) / max(1, len(h.stages))
	perStage := map[int]int{}
	apiKinds := h.rng.Perm(3) // each API fault kind at least once, in seeded order
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
		kind := h.rng.Intn(3)
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
		if pgStage >= 0 && stage >= pgStage {
			h.restartPostgres(ctx, phase)
			pgStage = -1
		}
		if tmStage >= 0 && stage >= tmStage {
			h.restartTemporal(ctx, phase)
			tmStage = -1
		}
		if phase == string(workflows.PhaseRunningStage) {
			h.blindTick(ctx, stage)
		}
		if nb := h.newBuild; nb.stage >= 0 && stage >= nb.stage {
			h.deployNewBuild(ctx, phase)
			nb.stage = -1
		}
		h.mu.Lock()
		armed := h.rep.apiFaults
		h.mu.Unlock()
		if armed < h.cfg.APIFaults && perStage[stage] < quota {
			if armed < len(apiKinds) {
				kind = apiKinds[armed]
			}
			f := h.apiFault(phase, kind, rand.New(rand.NewSource(pick)))
			if err := h.armFault(ctx, f); err != nil {
				h.say("arm %s on %s: %v", f.Kind, f.Target, err)
			} else {
				perStage[stage]++
				h.mu.Lock()
				h.rep.apiFaults++
				h.mu.Unlock()
			}
		}
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
	h.say("Temporal dev server restarted on its database file during %q (%s)", during, time.Since(t0).Round(time.Millisecond))
}

// apiFault picks an API-level fault aimed at what the rollout is doing now
// (phase: its current stage), or anywhere when that is not known.
func (h *harness) apiFault(phase string, kind int, rng *rand.Rand) faults.Fault {
	apis := []string{"mgs/0", "mgs/1", "sled-agent", "cnapi", "sapi", "imgapi", "kube"}
	switch {
	case strings.Contains(phase, "sp-firmware"), strings.Contains(phase, "host-flash"):
		apis = []string{"mgs/0", "mgs/1", "mgs/0/reset-reply", "mgs/1/reset-reply"}
	case strings.Contains(phase, "zone"):
		apis = []string{"sled-agent"}
	case strings.Contains(phase, "agent"):
		apis = []string{"cnapi", "sapi", "imgapi"}
	case strings.Contains(phase, "bootimage"):
		apis = []string{"kube"}
	}
	api := apis[rng.Intn(len(apis))]
	switch kind {
	case 0:
		return faults.Fault{Kind: faults.MGSDown, Target: "mgs/" + fmt.Sprint(rng.Intn(2)), Times: 10 + rng.Intn(40)}
	case 1:
		return faults.Fault{Kind: faults.Latency, Target: "api/" + strings.TrimSuffix(api, "/reset-reply"), Times: 20 + rng.Intn(80),
			Latency: fmt.Sprintf("%dms", 50+rng.Intn(250))}
	default:
		return faults.Fault{Kind: faults.ErrorRate, Target: "api/" + api, Times: 5 + rng.Intn(10),
			Rate: 0.05 + 0.2*rng.Float64()}
	}
}

// armFault arms f through fleetsim's fault endpoint.
func (h *harness) armFault(ctx context.Context, f faults.Fault) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, h.stack.FleetsimURL+"/faults", bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("fleetsim refused fault %s on %s: %s %s", f.Kind, f.Target, resp.Status, body)
	}
	h.mu.Lock()
	h.rep.FaultsArmed++
	h.rep.FaultKinds[f.Kind]++
	h.mu.Unlock()
	h.log.Info().Str("kind", string(f.Kind)).Str("target", f.Target).Msg("fault armed")
	return nil
}
