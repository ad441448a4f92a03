package workflows

import "time"

// Progress is what every workflow's "progress" query returns (a workflow may
// embed it in a larger struct). starter status/watch render it: bytes for
// flashes, counts for fan-outs, the current phase and how long it has run.
type Progress struct {
	Kind     Kind   `json:"kind"`
	Target   string `json:"target"`
	Artifact string `json:"artifact,omitempty"`
	State    State  `json:"state"`
	Phase    Phase  `json:"phase"`
	// PhaseSince is when the current phase started (workflow time).
	PhaseSince time.Time `json:"phaseSince"`
	Started    time.Time `json:"started"`
	// Done/Total in Unit ("bytes", "servers", "machinesets", "sagas", "stages").
	Done  int64  `json:"done"`
	Total int64  `json:"total"`
	Unit  string `json:"unit,omitempty"`
	// Attempt is the current attempt number (device updates).
	Attempt int `json:"attempt,omitempty"`
	// Counts of fan-out members by state (done, running, failed, skipped).
	Counts map[string]int `json:"counts,omitempty"`
	// Stragglers are members slower than the straggler factor × median.
	Stragglers []string `json:"stragglers,omitempty"`
	// ETA is the estimated completion (zero when unknown).
	ETA     time.Time `json:"eta,omitzero"`
	Message string    `json:"message,omitempty"`
	// Outcome says how it ended once State is terminal.
	Outcome string `json:"outcome,omitempty"`
}
