package approval

import "slices"

// Minimum is the least a worker's gates require whatever a plan says:
// the worker's configuration (--approval-require-signed-start,
// --approval-min-approvers, --approval-gated-kinds), never workflow
// input, so a plan cannot ask for less. The rollout reads it once, from
// an activity, and takes the stricter of it and the plan.
type Minimum struct {
	// SignedStart refuses a rollout whose start is not signed.
	SignedStart bool `json:"signedStart,omitempty"`
	// Approvers is the fewest distinct approvers a gate opens with.
	Approvers int `json:"approvers,omitempty"`
	// GatedKinds are the update kinds whose stages always wait at a gate.
	GatedKinds []string `json:"gatedKinds,omitempty"`
}

// Stricter is p raised to m: at least m's approvers.
func (m Minimum) Stricter(p Policy) Policy {
	p.Approvers = max(p.approvers(), m.Approvers)
	return p
}

// Gates says whether a stage of kind must wait at a gate under m.
func (m Minimum) Gates(kind string) bool { return slices.Contains(m.GatedKinds, kind) }
