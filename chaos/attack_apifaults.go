package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"github.com/fleetsaga/fleetsaga/fleetsim/faults"
)

// apiAim is the schedule of the API faults armed while the rollout runs.
type apiAim struct {
	total, quota int
	perStage     map[int]int
	// pending are kinds not armed yet (or taken back unfired), the most
	// constrained first: each must land once where it can bite.
	pending []faults.Kind
	armed   int
	mgsDown int // mgs_down faults armed so far (they alternate instances)
	live    []liveAPIFault
	// owed counts, per kind, faults taken back unfired and not armed again.
	owed map[faults.Kind]int
}

// liveAPIFault is an API fault armed in a stage, until it fired (an
// mgs_down: until it fired and mgsOutage passed since it was armed).
type liveAPIFault struct {
	id    int
	kind  faults.Kind
	stage int
	until time.Time
}

// mgsOutage bounds an mgs_down once it fired: it counts refused requests,
// and an SP only one MGS reaches, retried with a growing backoff, would
// wait minutes for the last of them (seed 1 short: sled 3 past the run's
// timeout). A few seconds at chaos speed is a real MGS restart.
const mgsOutage = 3 * time.Second

func newAPIAim(rng *rand.Rand, stages, total int) *apiAim {
	a := &apiAim{total: total, quota: (total + stages - 1) / max(1, stages), perStage: map[int]int{}, owed: map[faults.Kind]int{}}
	if total < stages {
		// A short run: fewer faults than stages. Spread one a stage, the
		// last ones landed in stages too brief (a drift check) or too late
		// to fire (seed 1: SAPI saw no call after them); the first stages,
		// long and busy, take them all.
		a.quota = total
	}
	// The constrained kind first (it bites only in the SP stages), then
	// the others in a seeded order.
	a.pending = []faults.Kind{faults.MGSDown}
	for _, i := range rng.Perm(2) {
		a.pending = append(a.pending, []faults.Kind{faults.Latency, faults.ErrorRate}[i])
	}
	if total < len(a.pending) {
		a.pending = a.pending[:max(0, total)]
	}
	return a
}

// next picks the kind to arm now in stage (named name), or false: a
// fault taken back unfired, where it can bite now (the same attack moved,
// outside any quota); then a pending kind that bites only in the SP
// stages, even over the stage's quota (few stages can take it); then,
// within the quota, a pending kind that can bite here, else (within the
// total too) any.
func (a *apiAim) next(stage int, name string, rng *rand.Rand) (faults.Kind, bool) {
	ok := func(k faults.Kind) bool { return canBite(k, name) }
	for _, k := range a.pending {
		if a.owed[k] > 0 && ok(k) {
			return k, true
		}
	}
	for _, k := range a.pending {
		if spOnly(k) && ok(k) {
			return k, true
		}
	}
	if a.perStage[stage] >= a.quota {
		return "", false
	}
	for _, k := range a.pending {
		if ok(k) {
			return k, true
		}
	}
	if a.armed >= a.total {
		return "", false
	}
	var cands []faults.Kind
	for _, k := range apiFaultKinds {
		if ok(k) {
			cands = append(cands, k)
		}
	}
	if len(cands) == 0 {
		return "", false
	}
	return cands[rng.Intn(len(cands))], true
}

func (a *apiAim) done(k faults.Kind) {
	for i, p := range a.pending {
		if p == k {
			a.pending = append(a.pending[:i], a.pending[i+1:]...)
			return
		}
	}
}

// aimTick takes back the API faults armed in an earlier stage that never
// fired (their kind is pending again) and arms what is due in this one.
func (h *harness) aimTick(ctx context.Context, stage int, rng *rand.Rand) {
	a := h.api
	if len(a.live) > 0 {
		if armed, err := h.obs.armedFaults(ctx); err == nil {
			byID := map[int]faults.Fault{}
			for _, f := range armed {
				byID[f.ID] = f
			}
			var keep []liveAPIFault
			for _, l := range a.live {
				f, still := byID[l.id]
				switch {
				case !still: // used up
				case f.Fired > 0 && l.kind == faults.MGSDown && time.Now().Before(l.until):
					keep = append(keep, l)
				case f.Fired > 0 && l.kind == faults.MGSDown:
					// It fired and lasted: the MGS comes back (not a
					// withdrawal: it counts as fired).
					if err := h.withdrawFault(ctx, l.id); err != nil {
						keep = append(keep, l)
					}
				case f.Fired > 0: // it fired: done with it
				case l.stage == stage:
					keep = append(keep, l)
				default:
					if err := h.withdrawFault(ctx, l.id); err != nil {
						h.say("take back unfired %s: %v", l.kind, err)
						keep = append(keep, l)
						continue
					}
					h.mu.Lock()
					h.withdrawn[l.id] = true
					h.rep.FaultsReaimed++
					h.mu.Unlock()
					a.pending = append([]faults.Kind{l.kind}, a.pending...)
					a.owed[l.kind]++
				}
			}
			a.live = keep
		}
	}
	for range apiFaultKinds {
		k, ok := a.next(stage, h.stages[stage], rng)
		if !ok || !h.armAPIFault(ctx, k, stage, rng) {
			return
		}
	}
}

// armAPIFault arms one API fault of kind k aimed at stage.
func (h *harness) armAPIFault(ctx context.Context, k faults.Kind, stage int, rng *rand.Rand) bool {
	a, name := h.api, h.stages[stage]
	f := apiFault(k, name, a.mgsDown, rng)
	if (k == faults.Latency || k == faults.ErrorRate) && canBite(faults.MGSDown, name) {
		// The instance the workers fail over to after the last mgs_down
		// (mgs/0 before any): the one they ask.
		f.Target = fmt.Sprintf("api/mgs/%d", a.mgsDown%2)
	}
	id, err := h.postFault(ctx, f)
	if err != nil {
		h.say("arm %s on %s: %v", f.Kind, f.Target, err)
		return false
	}
	// A fault armed again after it was taken back is the same attack.
	again := a.owed[k] > 0
	h.mu.Lock()
	h.faultIDs[id] = f.Kind
	if !again {
		h.rep.FaultsArmed++
		h.rep.FaultKinds[f.Kind]++
	}
	h.mu.Unlock()
	if again {
		a.owed[k]--
	} else {
		a.armed++
		a.perStage[stage]++
	}
	if k == faults.MGSDown {
		a.mgsDown++
	}
	a.done(k)
	a.live = append(a.live, liveAPIFault{id: id, kind: k, stage: stage, until: time.Now().Add(mgsOutage)})
	h.log.Info().Str("kind", string(f.Kind)).Str("target", f.Target).Str("stage", name).Msg("API fault armed")
	return true
}
