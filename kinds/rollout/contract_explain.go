package rollout

import (
	"time"

	"github.com/fleetsaga/fleetsaga/health"
)

// ExplainQuery answers "why is this rollout not moving" (starter explain).
const ExplainQuery = "explain"

// WaitReason is what a rollout waits for.
type WaitReason string

const (
	WaitRunning  WaitReason = "running"  // updates run; nothing holds it
	WaitApproval WaitReason = "approval" // a gate needs approvals
	WaitGate     WaitReason = "gate"     // a health gate is watching a batch
	WaitWindow   WaitReason = "window"   // outside the maintenance windows
	WaitFreeze   WaitReason = "freeze"   // a change freeze
	WaitPaused   WaitReason = "paused"   // paused (by an operator, or inconclusive health)
	WaitStopped  WaitReason = "stopped"  // a gate or a threshold aborted it
)

// Explanation is the rollout's one answer to "why is this not moving".
type Explanation struct {
	Waiting WaitReason `json:"waiting"`
	Stage   string     `json:"stage,omitempty"`
	Reason  string     `json:"reason"`
	Since   time.Time  `json:"since,omitzero"`
	// Gate is the last health gate round.
	Gate *GateStatus `json:"gate,omitempty"`
	// Running are the updates running now, longest first: a stalled
	// device is the first.
	Running []RunningUpdate `json:"running,omitempty"`
	// Batch is the current batch size of a ramped or gated stage.
	Batch int `json:"batch,omitempty"`
}

// RunningUpdate is one update running now.
type RunningUpdate struct {
	Target string    `json:"target"`
	Since  time.Time `json:"since"`
}

// GateStatus is a gate's last round, for starter status and explain.
type GateStatus struct {
	Stage        string         `json:"stage"`
	Batch        int            `json:"batch"`
	Round        int            `json:"round"`
	Verdict      health.Verdict `json:"verdict"`
	Reason       string         `json:"reason"`
	Failures     int            `json:"failures"`
	Inconclusive int            `json:"inconclusive"`
	Shadow       bool           `json:"shadow,omitempty"`
	Results      []HealthResult `json:"results"`
	At           time.Time      `json:"at"`
}
