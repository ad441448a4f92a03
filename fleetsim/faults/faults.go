// Package faults is fleetsim's fault injection: a registry of armed faults,
// keyed by kind and target, that the simulated devices consult at the moments
// the real ones fail. Firing is deterministic given the seed.
package faults

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"sync"
	"time"
)

// Kind names one failure the simulator can produce.
type Kind string

// The fault catalogue. Target formats are given beside each kind.
const (
	SPResetMidDelivery Kind = "sp_reset_mid_delivery" // sp/<type>/<slot>: SP resets when delivery passes AfterPercent
	MGSDown            Kind = "mgs_down"              // mgs/<i>: that MGS instance refuses connections (503 at the HTTP layer)
	SPStuck            Kind = "sp_stuck"              // sp/<type>/<slot>: delivery stops making progress
	UpdateFailed       Kind = "update_failed"         // sp/<type>/<slot>: the SP reports failed{code} at AfterPercent
	ForeignUpdate      Kind = "foreign_update"        // sp/<type>/<slot>: someone else starts an update (Version) before ours
	ResetReplyLost     Kind = "reset_reply_lost"      // sp/<type>/<slot>: the SP resets but the reset call's reply is lost
	// ResetErrorAfterReset: sp/<type>/<slot>: the SP resets and comes back,
	// but MGS answers the reset 503 SpCommunicationFailed (as when its
	// watchdog disarm or its wait for the SP failed).
	ResetErrorAfterReset Kind = "reset_error_after_reset"
	ZoneRemovalFailure   Kind = "zone_removal_failure" // zone/<uuid>: removing the zone fails (Times attempts)
	ServerOffline        Kind = "server_offline"       // server/<uuid>: the server stops answering (status unknown)
	TaskFailure          Kind = "task_failure"         // server/<uuid>[/<agent>]: the next install task (of that agent) fails
	PatchConflict        Kind = "patch_conflict"       // machineset/<cluster>/<name>: the next patch gets 409
	MachineSetRevert     Kind = "machineset_revert"    // machineset/<cluster>/<name>: another actor reverts each patch
	MachineBootFailure   Kind = "machine_boot_failure" // machineset/<cluster>/<name>: new machines never join
	Latency              Kind = "latency"              // api/<name> (mgs/0, sled-agent, cnapi, sapi, imgapi, kube) or "*": adds Latency to each request
	ErrorRate            Kind = "error_rate"           // api/<name> or "*": fails a Rate fraction of requests with 503
	BadVersion           Kind = "bad_version"          // sp/<type>/<slot>, host/<type>/<slot>, server/<uuid> or "*": the device reports unhealthy while it runs Version (a bad release)

	// ArtifactUploadStall: sled/<uuid> or "*": the sled-agent's artifact
	// store stops reading a PUT /artifacts body once it has taken
	// AfterPercent of it, and answers nothing until the client gives up
	// (each PUT it catches is one of its Times).
	ArtifactUploadStall Kind = "artifact_upload_stall"
)

var catalogue = map[Kind]bool{
	SPResetMidDelivery: true, MGSDown: true, SPStuck: true, UpdateFailed: true,
	ForeignUpdate: true, ResetReplyLost: true, ResetErrorAfterReset: true, ZoneRemovalFailure: true, ServerOffline: true, TaskFailure: true,
	PatchConflict: true, MachineSetRevert: true, MachineBootFailure: true, Latency: true, ErrorRate: true,
	BadVersion: true, ArtifactUploadStall: true,
}

// Kinds lists the catalogue in a stable order.
func Kinds() []Kind {
	out := make([]Kind, 0, len(catalogue))
	for k := range catalogue {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Fault is one armed fault.
type Fault struct {
	ID     int    `json:"id,omitempty"`
	Kind   Kind   `json:"kind"`
	Target string `json:"target"`
	// Times is how many times the fault fires before it disarms; 0 = until cleared.
	Times int `json:"times,omitempty"`
	// AfterPercent: for delivery faults, fire once delivery passes this percentage.
	AfterPercent int `json:"afterPercent,omitempty"`
	// Latency: for the latency fault, e.g. "200ms".
	Latency string `json:"latency,omitempty"`
	// Rate: for error_rate, the fraction of requests (0..1] that fail.
	Rate float64 `json:"rate,omitempty"`
	// Version: for foreign_update, the version the foreign update writes.
	Version string `json:"version,omitempty"`
	// Fired counts how many times the fault fired (read-only).
	Fired int `json:"fired"`
}

// Validate checks a fault before it is armed.
func (f Fault) Validate() error {
	if !catalogue[f.Kind] {
		return fmt.Errorf("unknown fault kind %q (known: %v)", f.Kind, Kinds())
	}
	if f.Target == "" {
		return fmt.Errorf("fault %s: target is required", f.Kind)
	}
	if f.Times < 0 {
		return fmt.Errorf("fault %s: times must be >= 0", f.Kind)
	}
	if f.AfterPercent < 0 || f.AfterPercent > 100 {
		return fmt.Errorf("fault %s: afterPercent must be within 0..100", f.Kind)
	}
	switch f.Kind {
	case Latency:
		if _, err := time.ParseDuration(f.Latency); err != nil {
			return fmt.Errorf("fault latency: bad latency %q: %v", f.Latency, err)
		}
	case ErrorRate:
		if f.Rate <= 0 || f.Rate > 1 {
			return fmt.Errorf("fault error_rate: rate must be within (0, 1], got %v", f.Rate)
		}
	case BadVersion:
		if f.Version == "" {
			return errors.New("fault bad_version: version is required (the release that makes a device unhealthy)")
		}
	}
	return nil
}

// LatencyDuration is the parsed Latency (valid after Validate).
func (f Fault) LatencyDuration() time.Duration {
	d, _ := time.ParseDuration(f.Latency)
	return d
}

// Registry holds the armed faults. Safe for concurrent use.
type Registry struct {
	mu     sync.Mutex
	rng    *rand.Rand
	nextID int
	armed  []*Fault
	// spent are faults that fired their Times and were disarmed: still
	// reported by Fired, so a run can say what it went through.
	spent []*Fault
	// sick are the devices each bad_version fault has made unhealthy, so
	// Fired counts devices, not health reads.
	sick map[int]map[string]bool
}

// NewRegistry returns an empty registry whose random choices follow seed.
func NewRegistry(seed int64) *Registry {
	return &Registry{rng: rand.New(rand.NewSource(seed)), nextID: 1}
}

// Arm validates and arms f, returning its ID.
func (r *Registry) Arm(f Fault) (int, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f.ID = r.nextID
	f.Fired = 0
	r.nextID++
	r.armed = append(r.armed, &f)
	return f.ID, nil
}

// Clear disarms every fault (id 0) or the one with id; it reports whether
// anything was disarmed. A cleared fault that fired stays in Fired.
func (r *Registry) Clear(id int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.armed[:0]
	cleared := false
	for _, f := range r.armed {
		if id != 0 && f.ID != id {
			kept = append(kept, f)
			continue
		}
		cleared = true
		if f.Fired > 0 {
			r.spent = append(r.spent, f)
		}
	}
	r.armed = kept
	return cleared
}

// List returns copies of the armed faults.
func (r *Registry) List() []Fault {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Fault, 0, len(r.armed))
	for _, f := range r.armed {
		out = append(out, *f)
	}
	return out
}

// Fired returns copies of every fault that fired at least once, armed or
// spent, in the order they were armed.
func (r *Registry) Fired() []Fault {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Fault
	for _, f := range append(append([]*Fault(nil), r.spent...), r.armed...) {
		if f.Fired > 0 {
			out = append(out, *f)
		}
	}
	slices.SortFunc(out, func(a, b Fault) int { return a.ID - b.ID })
	return out
}

// Unhealthy reports whether a device running version is made unhealthy
// by an armed bad_version fault; each device it catches counts once as a
// firing.
func (r *Registry) Unhealthy(target, version string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.armed {
		if f.Kind != BadVersion || f.Version != version || (f.Target != target && f.Target != "*") {
			continue
		}
		if r.sick == nil {
			r.sick = map[int]map[string]bool{}
		}
		if r.sick[f.ID] == nil {
			r.sick[f.ID] = map[string]bool{}
		}
		if !r.sick[f.ID][target] {
			r.sick[f.ID][target] = true
			f.Fired++
		}
		return true
	}
	return false
}

// Peek returns the first armed fault of kind for target without firing it.
func (r *Registry) Peek(kind Kind, target string) (Fault, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f := r.find(kind, target); f != nil {
		return *f, true
	}
	return Fault{}, false
}

// Fire consumes one firing of the first armed fault of kind for target (or
// armed for "*"), disarming it when its Times are used up.
func (r *Registry) Fire(kind Kind, target string) (Fault, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.find(kind, target)
	if f == nil {
		return Fault{}, false
	}
	r.fire(f)
	return *f, true
}

// Chance fires an error_rate-style fault with its Rate probability, drawn
// from the seeded generator.
func (r *Registry) Chance(kind Kind, target string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.find(kind, target)
	if f == nil || r.rng.Float64() >= f.Rate {
		return false
	}
	r.fire(f)
	return true
}

func (r *Registry) find(kind Kind, target string) *Fault {
	for _, f := range r.armed {
		if f.Kind == kind && (f.Target == target || f.Target == "*") {
			return f
		}
	}
	return nil
}

func (r *Registry) fire(f *Fault) {
	f.Fired++
	if f.Times > 0 && f.Fired >= f.Times {
		for i, a := range r.armed {
			if a == f {
				r.armed = append(r.armed[:i], r.armed[i+1:]...)
				r.spent = append(r.spent, f)
				break
			}
		}
	}
}
