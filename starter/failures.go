package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/failure"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// failedUpdate is one update of a rollout run that did not end as planned,
// with what the operator needs to act on it: the outcome's type and its
// reason in one line.
type failedUpdate struct {
	Kind       string `json:"kind"`
	Target     string `json:"target"`
	WorkflowID string `json:"workflowId"`
	Status     string `json:"status"`
	failureLine
}

// failureLine is a workflow's failure as the operator reads it, the same
// wherever it is printed: the outcome's type, its reason once on one line,
// and whether running the update again, unchanged, may end otherwise.
type failureLine struct {
	Outcome      string `json:"outcome,omitempty"`
	Reason       string `json:"reason,omitempty"`
	RerunMayHelp bool   `json:"rerunMayHelp"`
}

// String is the line: "WrongDevice: … (a rerun will not help: change
// something first)".
func (f failureLine) String() string {
	s := f.Reason
	if f.Outcome != "" {
		s = f.Outcome + ": " + s
	}
	return s + " (" + f.rerun() + ")"
}

func (f failureLine) rerun() string {
	if f.RerunMayHelp {
		return "a rerun may help"
	}
	return "a rerun will not help: change something first"
}

// maxReasonLen keeps a reason to one terminal line; the whole error is in
// `starter status` of the update.
const maxReasonLen = 160

// failedUpdatesQueryTimeout bounds the visibility reads behind the list:
// it is printed after the rollout ended, and must not hold the exit.
const failedUpdatesQueryTimeout = 15 * time.Second

// rolloutFailures lists the updates the rollout's current run started that
// failed, timed out, were terminated or cancelled. A plan's earlier runs
// share its name, so only children started since this run began count.
func rolloutFailures(ctx context.Context, c client.Client, rolloutID string) ([]failedUpdate, error) {
	ctx, cancel := context.WithTimeout(ctx, failedUpdatesQueryTimeout)
	defer cancel()
	kind, target, ok := workflows.ParseWorkflowID(rolloutID)
	if !ok || kind != workflows.KindRollout {
		return nil, nil
	}
	desc, err := c.DescribeWorkflowExecution(ctx, rolloutID, "")
	if err != nil {
		return nil, err
	}
	started := desc.WorkflowExecutionInfo.GetStartTime().AsTime()
	query := fmt.Sprintf("%s = %q AND %s != %q AND StartTime >= %q", workflows.SARollout.GetName(), strings.TrimPrefix(target, "plan/"),
		workflows.SAKind.GetName(), workflows.KindRollout, started.Format(time.RFC3339Nano))
	var out []failedUpdate
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.GetExecutions() {
			sa := e.GetSearchAttributes().GetIndexedFields()
			status := e.GetStatus()
			state := keywordAttr(sa[workflows.SAState.GetName()])
			if status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || status == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW ||
				(status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED && state != string(workflows.StateFailed)) {
				continue
			}
			f := failedUpdate{Kind: keywordAttr(sa[workflows.SAKind.GetName()]), Target: keywordAttr(sa[workflows.SATarget.GetName()]),
				WorkflowID: e.GetExecution().GetWorkflowId(),
				Status:     strings.ToLower(strings.TrimPrefix(status.String(), "WORKFLOW_EXECUTION_STATUS_"))}
			if status == enumspb.WORKFLOW_EXECUTION_STATUS_FAILED {
				f.failureLine = failureOf(c.GetWorkflow(ctx, f.WorkflowID, e.GetExecution().GetRunId()).Get(ctx, nil))
			}
			out = append(out, f)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return out, nil
		}
	}
}

// failureOf is a workflow failure as a failureLine (failure.Of).
func failureOf(err error) failureLine {
	if err == nil {
		return failureLine{}
	}
	f := failureLine{}
	f.Outcome, f.Reason = failure.Of(err)
	if f.Outcome == "Error" {
		f.Outcome = ""
	}
	f.Reason = oneLine(f.Reason)
	f.RerunMayHelp = failure.RerunMayHelp(f.Outcome)
	return f
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxReasonLen {
		s = s[:maxReasonLen-1] + "…"
	}
	return s
}

// printFailures is the human table of a rollout's failed updates.
func printFailures(w io.Writer, fs []failedUpdate) {
	if len(fs) == 0 {
		return
	}
	fmt.Fprintln(w, "failed updates:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  KIND\tTARGET\tSTATUS\tOUTCOME\tREASON")
	for _, f := range fs {
		why := ""
		if f.Status == "failed" {
			why = f.Reason + " (" + f.rerun() + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", f.Kind, f.Target, f.Status, f.Outcome, why)
	}
	tw.Flush()
}
