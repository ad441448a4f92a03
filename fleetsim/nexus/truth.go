package nexus

import (
	"github.com/google/uuid"
)

// Truth is GET /truth/nexus: per rack whose Nexus fleetsim plays.
type Truth struct {
	Racks []RackTruth `json:"racks"`
}

// RackTruth is one rack's Nexus.
type RackTruth struct {
	Rack   string `json:"rack"`
	Target Target `json:"target"`
	// Targets is every target in order (the first is rack setup's).
	Targets    []Target    `json:"targets"`
	Blueprints []uuid.UUID `json:"blueprints"`
	Executor   bool        `json:"executor"`
	MGSUpdates bool        `json:"mgs_updates"`
	PushCount  int         `json:"push_count"`
	// Pushes is the last config push to each sled and its answer.
	Pushes map[uuid.UUID]Push `json:"pushes"`
	// Planned are the planner's blueprint comments, in order.
	Planned []string       `json:"planned"`
	Sagas   []Reassignment `json:"saga_reassignments"`
	Updates []MGSUpdate    `json:"mgs_update_attempts"`
	// TargetRelease is the target release (nil: none set);
	// TargetReleases every one set, in order.
	TargetRelease  *TargetRelease  `json:"target_release"`
	TargetReleases []TargetRelease `json:"target_releases"`
}

// Truth implements domain.Domain.
func (d *Domain) Truth() any { return d.Snapshot() }

// Snapshot is the typed truth.
func (d *Domain) Snapshot() Truth {
	t := Truth{Racks: []RackTruth{}}
	for _, r := range d.racks {
		r.mu.Lock()
		rt := RackTruth{
			Rack: r.spec.ID, Target: r.target, Targets: append([]Target{}, r.history...),
			Blueprints: make([]uuid.UUID, 0, len(r.blueprints)),
			Executor:   r.spec.Owners.ExecutorOn(), MGSUpdates: r.spec.Owners.MGSUpdatesOn(),
			PushCount: r.pushCount, Pushes: make(map[uuid.UUID]Push, len(r.pushes)),
			Planned: append([]string{}, r.planned...), Sagas: append([]Reassignment{}, r.sagas...),
			Updates:       append([]MGSUpdate{}, r.updates...),
			TargetRelease: r.release, TargetReleases: append([]TargetRelease{}, r.releases...),
		}
		for id := range r.blueprints {
			rt.Blueprints = append(rt.Blueprints, id)
		}
		for k, v := range r.pushes {
			rt.Pushes[k] = v
		}
		r.mu.Unlock()
		t.Racks = append(t.Racks, rt)
	}
	return t
}
