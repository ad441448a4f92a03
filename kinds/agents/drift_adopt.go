package agents

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fleetsaga/fleetsaga/workflows"
)

const (
	// adoptInstallBound bounds the wait for an adopted install: longer than
	// an install of the largest datacenter, so the install ends first.
	adoptInstallBound = 24 * time.Hour
	// adoptInstallHeartbeat: the wait heartbeats every 20 s (the
	// rollout's adoptPoll).
	adoptInstallHeartbeat = time.Minute
	// adoptUpdateActivity is the rollout's AdoptUpdate activity
	// (rollout.RolloutActivities, registered on every worker), named here
	// because kinds/rollout imports this package (through the catalogue).
	adoptUpdateActivity = "AdoptUpdate"
	// adoptedInstallFailed types the error of an adopted install that
	// failed (its own error is the message).
	adoptedInstallFailed = "AdoptedInstallFailed"
)

// adoptInput and adoptResult are AdoptUpdate's input and result
// (rollout.AdoptUpdateInput, rollout.AdoptUpdateResult).
type adoptInput struct {
	WorkflowID string `json:"workflowId"`
	Parent     string `json:"parent"`
}

type adoptResult struct {
	Ours      bool           `json:"ours"`
	Result    map[string]any `json:"result,omitempty"`
	Error     string         `json:"error,omitempty"`
	Cancelled bool           `json:"cancelled,omitempty"`
}

// adoptInstall waits for the repair install id that an earlier run of this
// check started (an operator reset the check while its install ran: the
// reset run finds the drift again and its child start meets the install
// still running), and returns how it ended as if it were this run's
// child; without it the check would report that install as failed and
// the drift as left, while it went on and fixed it. ok is false when the
// running install is not this check's (another workflow's, or started by
// hand): it is left alone.
func (d *driftCheck) adoptInstall(ctx workflow.Context, id string) (out AgentInstallResult, ok bool, err error) {
	actx := workflow.WithActivityOptions(workflows.AwaitCancel(ctx), workflow.ActivityOptions{
		StartToCloseTimeout: adoptInstallBound, HeartbeatTimeout: adoptInstallHeartbeat, RetryPolicy: workflows.DeviceRetry,
		Summary: "wait for " + id + " (started before a reset)",
	})
	var res adoptResult
	if err := workflow.ExecuteActivity(actx, adoptUpdateActivity, adoptInput{
		WorkflowID: id, Parent: workflow.GetInfo(ctx).WorkflowExecution.ID,
	}).Get(ctx, &res); err != nil {
		return out, true, err
	}
	if !res.Ours {
		return out, false, nil
	}
	// The result's fields are the install's JSON: decoding depends on the
	// bytes alone (workflowcheck flags the reflection json uses).
	//workflowcheck:ignore
	if raw, err := json.Marshal(res.Result); err == nil {
		_ = json.Unmarshal(raw, &out)
	}
	switch {
	case res.Cancelled:
		return out, true, temporal.NewCanceledError(res.Error)
	case res.Error != "":
		return out, true, temporal.NewApplicationError(res.Error, adoptedInstallFailed)
	}
	return out, true, nil
}
