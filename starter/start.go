package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// update is one update a kind subcommand asks to start.
type update struct {
	Kind     workflows.Kind
	Target   string
	Artifact string
	Workflow any // the workflow function
	Input    any
	// Arg is what the workflow is started with when it is not Input (a
	// rollout's input with its signature); the request digest stays
	// Input's, so a second start of the same plan attaches.
	Arg any
}

// startFlags are the flags every kind subcommand shares.
type startFlags struct {
	wait       bool
	timeout    time.Duration
	dryRun     bool
	noPrecheck bool
}

func (f *startFlags) bind(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.wait, "wait", false, "watch the update until it ends and exit with its outcome")
	cmd.Flags().DurationVar(&f.timeout, "wait-timeout", 0, "with --wait, give up watching after this long (0 = never); with --dry-run, waiting for the plan (default 5m)")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, dryRunHelp)
	cmd.Flags().BoolVar(&f.noPrecheck, "no-precheck", false,
		"start without the read-only precheck that refuses (exit 2) a target that does not exist, the wrong device or a downgrade")
}

type startResult struct {
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId"`
	Attached   bool   `json:"attached"`
	Target     string `json:"target"`
	Kind       string `json:"kind"`
}

// requestMemo is the memo field holding a digest of the request that
// started an update: a second start of the same workflow ID attaches only
// when its request is the same.
const requestMemo = "fleetsagaRequest"

// requestDigest identifies a request by its kind and input, not by what the
// workflow resolved later (an agent install's search attribute holds the
// resolved image, not "newest").
func requestDigest(u update) string {
	b, _ := json.Marshal(struct {
		Kind  workflows.Kind `json:"kind"`
		Input any            `json:"input"`
	}{u.Kind, u.Input})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (u update) arg() any {
	if u.Arg != nil {
		return u.Arg
	}
	return u.Input
}

// workflow is what the start names: the function, whose argument the SDK
// checks against Input's type; with an Arg of another type (a superset of
// Input in JSON), the function's registered name, which it does not.
func (u update) workflow() any {
	if u.Arg == nil {
		return u.Workflow
	}
	// The SDK registers a function under its name without the package
	// path (internal getFunctionName).
	name := runtime.FuncForPC(reflect.ValueOf(u.Workflow).Pointer()).Name()
	return name[strings.LastIndex(name, ".")+1:]
}

// startUpdate starts u, or attaches to the same request already running
// under its workflow ID. Temporal decides which, atomically: the start
// fails with WorkflowExecutionAlreadyStarted when the ID runs, so two
// starters racing each other start one workflow. A different request
// running under the ID, or another update running on the same target, is
// refused (exit 5) with its workflow ID.
func (a *app) startUpdate(cmd *cobra.Command, u update, f startFlags) error {
	if err := workflows.CheckStart(u.Input); err != nil {
		return usageErr("%v", err)
	}
	if f.dryRun {
		return a.dryRun(cmd, u, f)
	}
	ctx := cmd.Context()
	c, err := a.dial(ctx)
	if err != nil {
		return err
	}
	id := workflows.WorkflowID(u.Kind, u.Target)
	if err := a.checkOtherBusy(ctx, c, id, u); err != nil {
		return err
	}
	if err := a.checkHeldByRollout(ctx, c, id, updateTargets(u)); err != nil {
		return err
	}
	digest := requestDigest(u)
	run, attached, meanwhile, err := a.startOrAttach(ctx, c, id, digest, u, f)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		return a.temporalErr("start "+id, err)
	}
	res := startResult{WorkflowID: run.GetID(), RunID: run.GetRunID(), Attached: attached, Target: u.Target, Kind: string(u.Kind)}
	a.print(res, func(w io.Writer) {
		switch {
		case meanwhile:
			fmt.Fprintf(w, "%s was started by the same request while this start prechecked (run %s): attached to it instead of starting a second\n", res.WorkflowID, res.RunID)
		case attached:
			fmt.Fprintf(w, "%s is already running (run %s): attached to it instead of starting a second\n", res.WorkflowID, res.RunID)
		default:
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

// startOrAttach starts u under id, after its precheck, or attaches to the
// run of the same request that runs, or that started while this start
// prechecked (meanwhile).
func (a *app) startOrAttach(ctx context.Context, c client.Client, id, digest string, u update, f startFlags) (run client.WorkflowRun, attached, meanwhile bool, err error) {
	if u.Kind != workflows.KindRollout && !f.noPrecheck {
		if before, running := a.latestRun(ctx, c, id); !running {
			if err := a.precheck(ctx, c, u); err != nil {
				return nil, false, false, err
			}
			if run := a.startedMeanwhile(ctx, c, id, before, digest); run != nil {
				return run, true, true, nil
			}
		}
	}
	run, err = a.start(ctx, c, id, digest, u)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		run, err = a.attach(ctx, c, id, already.RunId, digest, u)
		return run, true, false, err
	}
	return run, false, false, err
}

// start starts a new run of id for u (WorkflowExecutionAlreadyStarted
// when one runs).
func (a *app) start(ctx context.Context, c client.Client, id, digest string, u update) (client.WorkflowRun, error) {
	summary, details := u.staticSummary()
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                a.temporal.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		// Without it the SDK hands back the running workflow as if started.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		Memo:                                     map[string]any{requestMemo: digest},
		TypedSearchAttributes:                    workflows.StartAttributes(u.Kind, u.Target, u.Artifact),
		StaticSummary:                            summary,
		StaticDetails:                            details,
	}, u.workflow(), u.arg())
}

// staticSummary is what the Web UI shows for u beside its ID, fixed at the
// start: a rollout names its stages and gates (its current details say
// when it waits at one), an update its kind, target and artifact.
func (u update) staticSummary() (summary, details string) {
	if in, ok := u.Input.(rollout.RolloutInput); ok {
		return in.StartSummary(), in.StartDetails()
	}
	summary = fmt.Sprintf("%s of %s", u.Kind, u.Target)
	if u.Artifact != "" {
		summary += " to " + u.Artifact
	}
	return summary, ""
}

// attach returns the running run of id when it serves the same request,
// else refuses. A run started by an older starter has no request memo: its
// artifact search attribute is compared instead.
func (a *app) attach(ctx context.Context, c client.Client, id, runID, digest string, u update) (client.WorkflowRun, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, runID)
	if err != nil {
		return nil, a.temporalErr("describe running "+id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if p, ok := info.GetMemo().GetFields()[requestMemo]; ok {
		if keywordAttr(p) != digest {
			return nil, &exitError{exitRefused, fmt.Errorf("%s is already running a different request (artifact %q): wait for it or cancel it first",
				id, keywordAttr(info.GetSearchAttributes().GetIndexedFields()[workflows.SAArtifact.GetName()]))}
		}
	} else if artifact := keywordAttr(info.GetSearchAttributes().GetIndexedFields()[workflows.SAArtifact.GetName()]); artifact != u.Artifact {
		return nil, &exitError{exitRefused, fmt.Errorf("%s is already running with artifact %q, not %q: cancel it first", id, artifact, u.Artifact)}
	}
	return c.GetWorkflow(ctx, id, info.GetExecution().GetRunId()), nil
}

// latestRun is id's latest run ("" when none) and whether it is in
// progress: a start then attaches to it or is refused by it, and its
// precheck would only see it busy.
func (a *app) latestRun(ctx context.Context, c client.Client, id string) (runID string, running bool) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return "", false
	}
	info := desc.GetWorkflowExecutionInfo()
	return info.GetExecution().GetRunId(), info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
}

// startedMeanwhile returns the run of id that the same request started
// while this starter prechecked (its latest run is no longer before):
// two operators who gave the same command at once. The precheck spaces
// their starts by its own length, so that run may have ended already;
// starting again would be a rerun that finds nothing to do, so the start
// reports that run instead (attached), running or ended. A run of another
// request is not ours to report: the start goes on (and is refused while
// it runs).
func (a *app) startedMeanwhile(ctx context.Context, c client.Client, id, before, digest string) client.WorkflowRun {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil
	}
	info := desc.GetWorkflowExecutionInfo()
	runID := info.GetExecution().GetRunId()
	if runID == "" || runID == before {
		return nil
	}
	if p, ok := info.GetMemo().GetFields()[requestMemo]; !ok || keywordAttr(p) != digest {
		return nil
	}
	return c.GetWorkflow(ctx, id, runID)
}

// checkOtherBusy refuses when another workflow ID runs an update of
// u.Target (e.g. a host flash of an SP whose firmware is being updated).
// Visibility lags; the ledger's one-active-attempt-per-target rule is what
// finally guards the device.
func (a *app) checkOtherBusy(ctx context.Context, c client.Client, id string, u update) error {
	query := fmt.Sprintf(`%s = %q AND ExecutionStatus = "Running"`, workflows.SATarget.GetName(), u.Target)
	resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 10})
	if err != nil {
		return a.temporalErr("list running updates", err)
	}
	for _, e := range resp.GetExecutions() {
		if other := e.GetExecution().GetWorkflowId(); other != id {
			return &exitError{exitRefused, fmt.Errorf("target %s is busy with %s: wait for it or cancel it", u.Target, other)}
		}
	}
	return nil
}

// keywordAttr decodes a Keyword search attribute payload ("" when absent).
func keywordAttr(p *commonpb.Payload) string {
	var s string
	if p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &s)
	}
	return s
}
