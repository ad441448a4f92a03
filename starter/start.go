package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/fleetsaga/fleetsaga/workflows"
)

// update is one update a kind subcommand asks to start.
type update struct {
	Kind     workflows.Kind
	Target   string
	Artifact string
	Workflow any // the workflow function
	Input    any
}

// startFlags are the flags every kind subcommand shares.
type startFlags struct {
	wait    bool
	timeout time.Duration
}

func (f *startFlags) bind(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.wait, "wait", false, "watch the update until it ends and exit with its outcome")
	cmd.Flags().DurationVar(&f.timeout, "wait-timeout", 0, "with --wait, give up watching after this long (0 = never)")
}

type startResult struct {
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId"`
	Attached   bool   `json:"attached"`
	Target     string `json:"target"`
	Kind       string `json:"kind"`
}

// startUpdate starts u, or attaches to the same update already running.
// A different update running on the same target is refused (exit 5) with
// its workflow ID.
func (a *app) startUpdate(cmd *cobra.Command, u update, f startFlags) error {
	ctx := cmd.Context()
	c, err := a.dial(ctx)
	if err != nil {
		return err
	}
	id := workflows.WorkflowID(u.Kind, u.Target)
	attached, err := a.checkBusy(ctx, c, id, u)
	if err != nil {
		return err
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                a.temporal.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes:    workflows.StartAttributes(u.Kind, u.Target, u.Artifact),
	}, u.Workflow, u.Input)
	if err != nil {
		return &exitError{exitUnreachable, fmt.Errorf("start %s: %v", id, err)}
	}
	res := startResult{WorkflowID: run.GetID(), RunID: run.GetRunID(), Attached: attached, Target: u.Target, Kind: string(u.Kind)}
	a.print(res, func(w io.Writer) {
		if attached {
			fmt.Fprintf(w, "%s is already running (run %s): attached to it instead of starting a second\n", res.WorkflowID, res.RunID)
		} else {
			fmt.Fprintf(w, "started %s (run %s)\n", res.WorkflowID, res.RunID)
		}
	})
	if !f.wait {
		return nil
	}
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	return a.watch(ctx, c, run.GetID(), run.GetRunID())
}

// checkBusy looks for running updates on u.Target. The same update (same
// workflow ID and artifact) is attached to; anything else refuses.
func (a *app) checkBusy(ctx context.Context, c client.Client, id string, u update) (attached bool, err error) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err == nil && desc.WorkflowExecutionInfo.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		artifact := keywordAttr(desc.WorkflowExecutionInfo.GetSearchAttributes().GetIndexedFields()["FleetsagaArtifact"])
		if artifact != u.Artifact {
			return false, &exitError{exitRefused, fmt.Errorf("%s is already running with artifact %q, not %q: cancel it first", id, artifact, u.Artifact)}
		}
		return true, nil
	}
	query := fmt.Sprintf(`%s = %q AND ExecutionStatus = "Running"`, workflows.SATarget.GetName(), u.Target)
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 10})
	if err != nil {
		return false, &exitError{exitUnreachable, fmt.Errorf("list running updates: %v", err)}
	}
	for _, e := range resp.GetExecutions() {
		if other := e.GetExecution().GetWorkflowId(); other != id {
			return false, &exitError{exitRefused, fmt.Errorf("target %s is busy with %s: wait for it or cancel it", u.Target, other)}
		}
	}
	return false, nil
}

// keywordAttr decodes a Keyword search attribute payload ("" when absent).
func keywordAttr(p *commonpb.Payload) string {
	var s string
	if p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &s)
	}
	return s
}
