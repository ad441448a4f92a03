package rollout

import (
	"encoding/json"

	"github.com/fleetsaga/fleetsaga/approval"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// RolloutInput is a validated plan: stages run in order; within a stage,
// updates run with bounded concurrency, never two of one exclusive group at
// once, and an optional approval gate before the stage starts.
type RolloutInput struct {
	Name   string  `json:"name"`
	Stages []Stage `json:"stages"`
	// StartSignature is the starter's signature over the plan's digest
	// (approval.DigestJSON of this input without it): the rollout verifies
	// it first (VerifyStart), and its principal is the starter four eyes
	// excludes. nil: an unsigned start.
	StartSignature *approval.Signed `json:"startSignature,omitempty"`
	// Calendar is when targets may start (windows, freezes); nil: any time.
	Calendar *Calendar `json:"calendar,omitempty"`
	// Notify names the worker's webhooks told of gates, stage ends,
	// aborts, stragglers and stalls; nil: none.
	Notify *Notify `json:"notify,omitempty"`
}

// Stage is one step of a plan: updates of one kind.
type Stage struct {
	Name string         `json:"name"`
	Kind workflows.Kind `json:"kind"`
	// Concurrency bounds how many updates of the stage run at once.
	Concurrency int `json:"concurrency"`
	// Approval makes the rollout wait for `starter approve` before the stage.
	Approval bool `json:"approval,omitempty"`
	// ApprovalPolicy is what the gate needs (distinct approvers, four
	// eyes, who may approve); nil: one approver, any allowed signer.
	ApprovalPolicy *approval.Policy `json:"approvalPolicy,omitempty"`
	// FailureBudget is how many updates may fail before the stage stops
	// starting new ones (0: the first failure stops it).
	FailureBudget int `json:"failureBudget,omitempty"`
	// Exclusive lists groups of targets of which at most one runs at a time
	// (e.g. the two switch-attached sleds).
	Exclusive [][]string   `json:"exclusive,omitempty"`
	Updates   []PlanUpdate `json:"updates"`
	// Health is the gate after each batch; nil: none.
	Health *HealthGate `json:"health,omitempty"`
	// Thresholds abort on a failure percentage by class.
	Thresholds []Threshold `json:"thresholds,omitempty"`
	// Ramp grows the batch after healthy batches; nil: full concurrency.
	Ramp *Ramp `json:"ramp,omitempty"`
}

// PlanUpdate is one update: its canonical target and its kind's input.
type PlanUpdate struct {
	Target   string          `json:"target"`
	Artifact string          `json:"artifact,omitempty"`
	Input    json.RawMessage `json:"input"`
}

// UpdateOutcome is how one update of a rollout ended.
type UpdateOutcome struct {
	Stage      string          `json:"stage"`
	Target     string          `json:"target"`
	WorkflowID string          `json:"workflowId"`
	State      workflows.State `json:"state"`
	Outcome    string          `json:"outcome,omitempty"`
	Error      string          `json:"error,omitempty"`
	// FailureType and Class say why a failed update failed (the thresholds
	// count classes).
	FailureType string       `json:"failureType,omitempty"`
	Class       FailureClass `json:"class,omitempty"`
}

// RolloutResult summarises a rollout.
type RolloutResult struct {
	Name     string          `json:"name"`
	Outcomes []UpdateOutcome `json:"outcomes"`
	Failed   int             `json:"failed"`
	Skipped  int             `json:"skipped"`
	// Refused counts updates refused rather than failed: their target
	// drifted from the approved plan (gate_plan.go), or another
	// update held it.
	Refused int `json:"refused,omitempty"`
}

// RolloutWorkflowID is the workflow ID of a plan's rollout.
func RolloutWorkflowID(name string) string {
	return workflows.WorkflowID(workflows.KindRollout, "plan/"+name)
}

// maxRolloutUpdates bounds a plan so the parent stays far below Temporal's
// history limits (a few events per child); larger fan-outs belong inside
// one kind (AgentInstall windows its own children).
const maxRolloutUpdates = 400

// GatePlanQuery answers the plan a rollout shows at its current gate
// (null when it is not at a gate, or still planning).
const GatePlanQuery = "gate-plan"

// OutcomePlanDrift is the outcome of an update a gated stage did not start
// because its target no longer matched the approved plan.
const OutcomePlanDrift = "PlanDrift"

// StateRefused is the outcome state of such an update, and of one whose
// target another update held (OutcomeTargetClaimed, TargetBusy): a refusal
// is not a failure and does not count against the stage's budget.
const StateRefused workflows.State = "refused"

// OutcomeTargetClaimed is the outcome of an update that another workflow
// (another rollout's child, or an update started by hand) was running.
const OutcomeTargetClaimed = "TargetClaimed"
