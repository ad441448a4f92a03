package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

// dryRunHelp is the --dry-run flag's help, exit codes included.
const dryRunHelp = `plan only: the workers precheck every target read-only and print what would happen
(nothing is written to devices or the ledger); exit 0 nothing would change,
6 changes planned, 7 some target would be refused`

// defaultDryRunTimeout bounds the wait for a dry run (a few reads per target).
const defaultDryRunTimeout = 5 * time.Minute

// dryRunPlan is the plan a dry run of u covers: a rollout's own plan, or a
// one-stage plan holding the one update.
func dryRunPlan(u update) (rollout.RolloutInput, error) {
	if in, ok := u.Input.(rollout.RolloutInput); ok {
		return in, nil
	}
	raw, err := json.Marshal(u.Input)
	if err != nil {
		return rollout.RolloutInput{}, usageErr("encode the update: %v", err)
	}
	return rollout.RolloutInput{Name: string(u.Kind), Stages: []rollout.Stage{{
		Name: string(u.Kind), Kind: u.Kind, Concurrency: 1,
		Updates: []rollout.PlanUpdate{{Target: u.Target, Artifact: u.Artifact, Input: raw}},
	}}}, nil
}

// dryRun runs the DryRun workflow for u on the workers, waits for it and
// prints its rows. The exit code says what the plan would do.
func (a *app) dryRun(cmd *cobra.Command, u update, f startFlags) error {
	ctx := cmd.Context()
	c, err := a.dial(ctx)
	if err != nil {
		return err
	}
	timeout := f.timeout
	if timeout <= 0 {
		timeout = defaultDryRunTimeout
	}
	res, err := a.runDryRun(ctx, c, u, timeout)
	if err != nil {
		return err
	}
	if in, ok := u.Input.(rollout.RolloutInput); ok && in.Calendar != nil {
		res.Schedule = rollout.StageTimes(in.Calendar, res.Stages, time.Now())
	}
	a.print(res, func(w io.Writer) { printPlan(w, res) })
	return planExit(res)
}

// runDryRun runs the DryRun workflow for u and returns its plan.
func (a *app) runDryRun(ctx context.Context, c client.Client, u update, timeout time.Duration) (rollout.PlanResult, error) {
	var res rollout.PlanResult
	in, err := dryRunPlan(u)
	if err != nil {
		return res, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       rollout.DryRunWorkflowID(u.Target, uuid.NewString()),
		TaskQueue:                a.temporal.TaskQueue,
		WorkflowExecutionTimeout: timeout,
	}, rollout.DryRun, in)
	if err != nil {
		return res, a.temporalErr("start the dry run", err)
	}
	if err := run.Get(ctx, &res); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return res, &exitError{exitUnreachable, fmt.Errorf("dry run %s: no answer within %s (are workers running?)", run.GetID(), timeout)}
		}
		return res, &exitError{exitFailed, fmt.Errorf("dry run %s: %v", run.GetID(), err)}
	}
	return res, nil
}

// planExit is a dry run's exit code: 0 nothing would change, 6 changes
// planned, 7 some target would be refused.
func planExit(res rollout.PlanResult) error {
	switch {
	case res.Refused > 0:
		return &exitError{exitPlanRefused, nil}
	case res.Changes > 0:
		return &exitError{exitPlanChanges, nil}
	}
	return nil
}

// printPlan prints a plan as one table per stage.
func printPlan(w io.Writer, res rollout.PlanResult) {
	fmt.Fprintf(w, "dry run of %s: %d to change, %d refused, about %s (nothing was changed)\n",
		res.Name, res.Changes, res.Refused, res.Estimate.Round(time.Second))
	if len(res.Stages) > 1 {
		fmt.Fprintln(w, "every stage is planned against the fleet as it is now, not as earlier stages will leave it")
	}
	for _, st := range res.Schedule {
		fmt.Fprintf(w, "stage %s would run %s → %s", st.Stage, st.Start.Format(time.RFC3339), st.End.Format(time.RFC3339))
		if st.Waits != "" {
			fmt.Fprintf(w, " (%s)", st.Waits)
		}
		fmt.Fprintln(w)
	}
	for _, st := range res.Stages {
		printStagePlan(w, st)
	}
}

// printStagePlan prints one stage's plan: its settings, then its rows.
func printStagePlan(w io.Writer, st rollout.StagePlan) {
	fmt.Fprintf(w, "\nstage %s (%s): concurrency %d", st.Stage, st.Kind, st.Concurrency)
	for _, g := range st.Exclusive {
		fmt.Fprintf(w, ", never at once: %s", strings.Join(g, " "))
	}
	if st.Approval {
		fmt.Fprint(w, ", waits for approval")
	}
	fmt.Fprintf(w, "; %d to change, %d refused, about %s; digest %s\n", st.Changes, st.Refused, st.Estimate.Round(time.Second), st.Digest)
	if st.EstimateBasis != "" {
		fmt.Fprintf(w, "estimate: %s\n", st.EstimateBasis)
	}
	if st.StillNeeded != "" {
		fmt.Fprintf(w, "still needed: %s", st.StillNeeded)
		if len(st.ApprovedBy) > 0 {
			fmt.Fprintf(w, " (approved so far by %s)", strings.Join(st.ApprovedBy, ", "))
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ORDER\tTARGET\tDEVICE\tCURRENT\tDESIRED\tACTION\tREASON")
	for _, r := range st.Rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Order, r.Target, dash(r.Device), dash(r.Current), dash(r.Desired), r.Action, r.Reason)
	}
	_ = tw.Flush()
	// What the digest binds beyond the rows: the settings and the bytes.
	for _, l := range st.BoundLines() {
		fmt.Fprintln(w, l)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// gatePlan is the plan a rollout shows at its gate (nil when none).
func gatePlan(ctx context.Context, c client.Client, id string) *rollout.StagePlan {
	if kind, _, _ := workflows.ParseWorkflowID(id); kind != workflows.KindRollout {
		return nil
	}
	sp, _ := queryGatePlan(ctx, c, id)
	return sp
}

// queryGatePlan asks a rollout for its gate's plan: nil while it plans (or
// is at no gate); an error when it cannot answer (a run that started
// before gates planned).
func queryGatePlan(ctx context.Context, c client.Client, id string) (*rollout.StagePlan, error) {
	v, err := c.QueryWorkflow(ctx, id, "", rollout.GatePlanQuery)
	if err != nil {
		return nil, err
	}
	var sp *rollout.StagePlan
	return sp, v.Get(&sp)
}

// awaitGatePlan waits (bounded) until a rollout at a gate has planned the
// stage, so an approval binds to a plan; nil when it is at no gate or
// cannot say.
func awaitGatePlan(ctx context.Context, c client.Client, id string) *rollout.StagePlan {
	ctx, cancel := context.WithTimeout(ctx, gatePlanWait)
	defer cancel()
	for {
		if p, err := queryProgress(ctx, c, id, ""); err != nil || !atGate(p) {
			return nil
		}
		sp, err := queryGatePlan(ctx, c, id)
		if err != nil || sp != nil {
			return sp
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// gatePlanWait bounds the wait for a gate's plan: a few reads per target.
const gatePlanWait = 2 * time.Minute
