package nexus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fleetsaga/fleetsaga/fleet/sledagent"
	"github.com/fleetsaga/fleetsaga/fleetsim/httpx"
)

// Push is the executor's last PUT /omicron-config to one sled.
type Push struct {
	BlueprintID uuid.UUID `json:"blueprint_id"`
	Generation  uint64    `json:"generation"`
	// Status is the sled-agent's HTTP status (0: no answer).
	Status int `json:"status"`
	// Error is the sled-agent's message when it refused the config.
	Error string    `json:"error,omitempty"`
	At    time.Time `json:"at"`
}

// Reassignment is one saga reassignment by the executor.
type Reassignment struct {
	From            uuid.UUID `json:"from"`
	To              uuid.UUID `json:"to"`
	NexusGeneration uint64    `json:"nexus_generation"`
	Sagas           int64     `json:"sagas"`
	At              time.Time `json:"at"`
}

// loop is Nexus's periodic work while the target is enabled: execute the
// target (push sled configs, reassign sagas), drive pending MGS updates,
// and plan (ready for cleanup, done MGS updates).
func (r *rack) loop() {
	every := r.d.env.Scale(r.d.env.Spec.Timings.BlueprintExecutorInterval.Duration)
	if every <= 0 {
		every = time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.d.ctx.Done():
			return
		case <-t.C:
		}
		r.tick(r.d.ctx)
	}
}

func (r *rack) tick(ctx context.Context) {
	target, bp := r.current()
	if !target.Enabled || bp == nil {
		return
	}
	if r.spec.Owners.ExecutorOn() {
		r.pushAll(ctx, bp)
		r.reassignSagas(ctx, bp)
	}
	if r.spec.Owners.MGSUpdatesOn() {
		r.driveMGSUpdates(bp)
	}
	r.plan(ctx)
}

// pushAll PUTs every active sled's config from bp, as the executor's
// deploy_sled_configs step does; the sled-agent decides by generation.
func (r *rack) pushAll(ctx context.Context, bp *Blueprint) {
	ids := make([]uuid.UUID, 0, len(bp.Sleds))
	for id := range bp.Sleds {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	for _, id := range ids {
		s := bp.Sleds[id]
		if s.State != "active" {
			continue
		}
		p := Push{BlueprintID: bp.ID, Generation: s.SledAgentGeneration, At: time.Now().UTC()}
		p.Status, p.Error = r.push(ctx, id, s)
		if p.Status != http.StatusNoContent {
			r.d.log.Info().Str("sled", id.String()).Int("status", p.Status).Str("error", p.Error).Msg("executor: sled config not applied")
		}
		r.mu.Lock()
		r.pushes[id] = p
		r.pushCount++
		r.mu.Unlock()
	}
}

func (r *rack) push(ctx context.Context, id uuid.UUID, s *SledConfig) (int, string) {
	cfg, err := s.sledAgentConfig()
	if err != nil {
		return 0, err.Error()
	}
	body, err := json.Marshal(cfg)
	if err != nil {
		return 0, err.Error()
	}
	addr := r.d.sleds.SledAgentAddress(id)
	if addr == "" {
		return 0, "sled not found"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+addr+"/omicron-config", bytes.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("api-version", sledAgentAPIVersion)
	resp, err := r.d.http.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return resp.StatusCode, ""
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var eb httpx.ErrorBody
	if json.Unmarshal(raw, &eb) == nil && eb.Message != "" {
		return resp.StatusCode, eb.Message
	}
	return resp.StatusCode, string(raw)
}

// plan is the planner's part fleetsim plays: from a fresh inventory, mark
// expunged zones ready for cleanup (their sled ledgered as_of_generation
// or later and no longer has the zone) and drop pending MGS updates whose
// device runs the artifact. Any change is a child of the target that
// becomes the new target, keeping its enabled flag.
func (r *rack) plan(ctx context.Context) {
	target, bp := r.current()
	next := bp.child("")
	var changes []string
	if r.spec.Owners.ExecutorOn() {
		for sid, s := range next.Sleds {
			var inv *sledagent.Inventory
			for zid, z := range s.Zones {
				expunged, ready := z.Expunged()
				if !expunged || ready {
					continue
				}
				if inv == nil {
					i, err := r.d.inventory(ctx, sid)
					if err != nil {
						r.d.log.Info().Err(err).Msg("planner: no inventory")
						break
					}
					inv = i
				}
				if gone, _ := inv.ZoneGone(zid, *z.Disposition.AsOfGeneration); gone {
					t := true
					z.Disposition.ReadyForCleanup = &t
					changes = append(changes, fmt.Sprintf("zone %s ready for cleanup", zid))
				}
			}
		}
	}
	if r.spec.Owners.MGSUpdatesOn() {
		kept := next.PendingMGSUpdates.ByBaseboard[:0]
		for _, u := range next.PendingMGSUpdates.ByBaseboard {
			if r.mgsUpdateDone(u) {
				changes = append(changes, fmt.Sprintf("MGS update of %s/%s to %s done", u.BaseboardID.PartNumber, u.BaseboardID.SerialNumber, u.ArtifactVersion))
				continue
			}
			kept = append(kept, u)
		}
		next.PendingMGSUpdates.ByBaseboard = kept
	}
	if len(changes) == 0 {
		return
	}
	slices.Sort(changes)
	next.Comment = "fleetsim planner: " + strings.Join(changes, "; ")
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.target.TargetID != target.TargetID {
		return // the target moved under the planner: plan again next time
	}
	r.blueprints[next.ID] = next
	r.setTarget(Target{TargetID: next.ID, Enabled: r.target.Enabled, TimeMadeTarget: time.Now().UTC()})
	r.planned = append(r.planned, next.Comment)
}

// reassignSagas is the executor's saga step as each Nexus runs it: the
// unfinished sagas of Nexus zones bp has expunged and marked ready for
// cleanup go to a running, in-service Nexus of the same nexus_generation
// (the first by zone ID plays the Nexus that runs this step). Sagas of a
// zone with no such Nexus stay where they are.
func (r *rack) reassignSagas(ctx context.Context, bp *Blueprint) {
	if r.d.db == nil {
		return
	}
	running := map[uuid.UUID]bool{}
	for _, n := range r.d.sleds.Snapshot().Nexus {
		running[n.ZoneID] = n.Running
	}
	type nexusZone struct {
		id  uuid.UUID
		gen uint64
	}
	var alive, gone []nexusZone
	for _, s := range bp.Sleds {
		for id, z := range s.Zones {
			gen, ok := nexusGenerationOf(z.ZoneType)
			if !ok {
				continue
			}
			expunged, ready := z.Expunged()
			switch {
			case !expunged && running[id]:
				alive = append(alive, nexusZone{id, gen})
			case expunged && ready:
				gone = append(gone, nexusZone{id, gen})
			}
		}
	}
	slices.SortFunc(alive, func(a, b nexusZone) int { return strings.Compare(a.id.String(), b.id.String()) })
	for _, g := range gone {
		i := slices.IndexFunc(alive, func(a nexusZone) bool { return a.gen == g.gen })
		if i < 0 {
			continue
		}
		to := alive[i].id
		res, err := r.d.db.ExecContext(ctx, `
UPDATE omicron.saga SET current_sec = $1, adopt_generation = adopt_generation + 1, adopt_time = now()
WHERE current_sec IS NOT NULL AND current_sec = $2 AND saga_state <> 'done'`, to, g.id)
		if err != nil {
			r.d.log.Warn().Err(err).Str("from", g.id.String()).Msg("executor: saga reassignment failed")
			continue
		}
		n, _ := res.RowsAffected()
		if n == 0 {
			continue
		}
		r.mu.Lock()
		r.sagas = append(r.sagas, Reassignment{From: g.id, To: to, NexusGeneration: g.gen, Sagas: n, At: time.Now().UTC()})
		r.mu.Unlock()
	}
}
