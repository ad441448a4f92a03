package activities

import (
	"errors"

	"go.temporal.io/sdk/temporal"
)

// PlanAction is what a dry run says an update would do to one target (or
// one device of a fan-out target).
type PlanAction string

const (
	// PlanUpdate: the update would change it.
	PlanUpdate PlanAction = "update"
	// PlanAtTarget: it already is what the update asks for.
	PlanAtTarget PlanAction = "already-at-target"
	// PlanSkip: the update would leave it alone on purpose (owner
	// reference, custom image, Windows, offline server, excluded agent…).
	PlanSkip PlanAction = "skip"
	// PlanRefuse: the update would stop there with an error (wrong device,
	// downgrade, last Nexus, target busy…).
	PlanRefuse PlanAction = "refuse"
)

// Changes reports whether the action changes anything.
func (a PlanAction) Changes() bool { return a == PlanUpdate }

// PlanRow is one line of a plan: what a target (or one device of a
// fan-out target) is now, what the update wants, and what it would do.
type PlanRow struct {
	Stage string `json:"stage,omitempty"`
	Kind  string `json:"kind"`
	// Target is the update's canonical target (ledger, workflow ID).
	Target string `json:"target"`
	// Device names a server, MachineSet or agent inside a fan-out target
	// ("" when the target is the device).
	Device  string     `json:"device,omitempty"`
	Current string     `json:"current"`
	Desired string     `json:"desired"`
	Action  PlanAction `json:"action"`
	Reason  string     `json:"reason,omitempty"`
	// Order is the update's place in its stage's start order (1-based);
	// Group names its exclusive group ("" = none).
	Order int    `json:"order,omitempty"`
	Group string `json:"group,omitempty"`
}

// RefusalReason is the reason a refusal row gives for err: "Type: message"
// for an application error (fatal says it is non-retryable), else the
// error's text.
func RefusalReason(err error) (reason string, fatal bool) {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		return err.Error(), false
	}
	return ae.Type() + ": " + ae.Message(), ae.NonRetryable()
}

// RefuseRow turns a non-retryable error of a precheck into the refusal it
// means. Other errors are returned (the activity is retried).
func RefuseRow(row PlanRow, err error) (PlanRow, error) {
	reason, fatal := RefusalReason(err)
	if !fatal {
		return row, err
	}
	row.Action, row.Reason = PlanRefuse, reason
	return row, nil
}
