package rollout

import (
	"fmt"
	"time"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// StagePlan is what one stage would do: a row per target (per device for
// fan-out kinds) in start order, the stage's concurrency and exclusive
// groups, and an estimate of its duration.
type StagePlan struct {
	Stage       string              `json:"stage"`
	Kind        workflows.Kind      `json:"kind"`
	Concurrency int                 `json:"concurrency"`
	Exclusive   [][]string          `json:"exclusive,omitempty"`
	Approval    bool                `json:"approval,omitempty"`
	Rows        []workflows.PlanRow `json:"rows"`
	// Changes counts the rows that change something, Refused the refusals.
	Changes int `json:"changes"`
	Refused int `json:"refused"`
	// Estimate is the stage's duration from its concurrency and one
	// device's change time; EstimateBasis says where that time comes from
	// (this fleet's recent changes, or the kind's typical time).
	Estimate      time.Duration `json:"estimate"`
	EstimateBasis string        `json:"estimateBasis,omitempty"`
	// Binding is what the digest binds beyond the rows: each update's
	// target as its input reads, its images' SHA-256s, and the stage's
	// safety settings (nil at the gate of a run started before
	// boundDigestVersion, whose digest binds the rows alone).
	Binding *StageBinding `json:"binding,omitempty"`
	// Digest identifies the plan: an approval binds to it.
	Digest string `json:"digest"`
	// RunID is the rollout's original run ID, which an approval of this
	// plan binds too (approval.Statement.Run); only the gate-plan query
	// sets it.
	RunID string `json:"runId,omitempty"`
	// StillNeeded says, at a rollout's gate, what the gate needs before it
	// opens ("2 more approvals, not by alice"), and ApprovedBy who
	// approved it so far. Empty in a dry run, and before any approval on
	// a gate that verifies none.
	StillNeeded string   `json:"stillNeeded,omitempty"`
	ApprovedBy  []string `json:"approvedBy,omitempty"`
}

// PlanResult is a dry run of a plan (or of one update, as a one-stage plan).
type PlanResult struct {
	// Schedule is when each stage would run under the plan's calendar
	// (set by the starter: StageTimes; nil without a calendar).
	Schedule []StageTime   `json:"schedule,omitempty"`
	Name     string        `json:"name"`
	Stages   []StagePlan   `json:"stages"`
	Changes  int           `json:"changes"`
	Refused  int           `json:"refused"`
	Estimate time.Duration `json:"estimate"`
}

// Rows are every stage's rows in order.
func (p PlanResult) Rows() []workflows.PlanRow {
	var out []workflows.PlanRow
	for _, st := range p.Stages {
		out = append(out, st.Rows...)
	}
	return out
}

// DryRunWorkflowID is a dry run's workflow ID: unique per request (dry
// runs never conflict), outside the update namespace (never mistaken for
// an update of the target, never counted as one running).
func DryRunWorkflowID(target, requestID string) string {
	return "fleetsaga-dryrun/" + target + "/" + requestID
}

func (p PlanResult) summary() string {
	return fmt.Sprintf("%d changes, %d refused, about %s", p.Changes, p.Refused, p.Estimate)
}

// StageTime is when a dry run expects a stage to run under the plan's
// calendar: it starts when the one before it ends, inside a window and
// outside every freeze, and its estimated work pauses while the calendar
// is closed.
type StageTime struct {
	Stage string    `json:"stage"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Waits says what delays the stage ("" when nothing does).
	Waits string `json:"waits,omitempty"`
}

// forRun is p as the gate-plan query answers it: a copy naming run.
func (p *StagePlan) forRun(run string) *StagePlan {
	if p == nil {
		return nil
	}
	c := *p
	c.RunID = run
	return &c
}
