package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func init() {
	commands = append(commands, func(a *app) *cobra.Command {
		var untilGate bool
		cmd := &cobra.Command{
			Use:     "watch WORKFLOW_ID",
			Short:   "Follow an update's progress until it ends; exit with its outcome",
			Example: "  starter watch fleetsaga/sp-firmware/sp/sled/2\n  starter watch fleetsaga/rollout/plan/demo --until-gate && starter approve fleetsaga/rollout/plan/demo --by alice --reason \"SP stage healthy\"",
			Args:    exactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := a.dial(cmd.Context())
				if err != nil {
					return err
				}
				if untilGate {
					return a.watchUntilGate(cmd.Context(), c, args[0])
				}
				return a.watch(cmd.Context(), c, args[0], "")
			},
		}
		cmd.Flags().BoolVar(&untilGate, "until-gate", false, "return (exit 0) as soon as the rollout waits at an approval gate and shows the stage's plan, so a script can approve; if it ends first, exit with its outcome")
		cmd.Flags().StringVar(&a.liveDB, "database-url", os.Getenv("DATABASE_URL"), "ledger PostgreSQL URL for live device progress between the workflow's checkpoints (env DATABASE_URL; optional)")
		return cmd
	})
}

// watch renders progress (bars on a TTY, lines otherwise) until the
// workflow closes, then returns its outcome as an exit code.
func (a *app) watch(ctx context.Context, c client.Client, id, runID string) error {
	return a.watchUntil(ctx, c, id, runID, nil)
}

// watchUntilGate watches a rollout until it waits at an approval gate.
func (a *app) watchUntilGate(ctx context.Context, c client.Client, id string) error {
	if kind, _, _ := workflows.ParseWorkflowID(id); kind != workflows.KindRollout {
		return usageErr("--until-gate is for rollouts (fleetsaga/rollout/plan/NAME); %s has no approval gates", id)
	}
	return a.watchUntil(ctx, c, id, "", func(p workflows.Progress) bool {
		if !atGate(p) {
			return false
		}
		sp, err := queryGatePlan(ctx, c, id)
		if err != nil {
			return true // a run from before gates planned: no plan to show
		}
		if sp == nil {
			return false // still planning the stage
		}
		if !a.json {
			printStagePlan(a.out, *sp)
		}
		return true
	})
}

// atGate says whether a rollout's progress shows it waiting for approval.
func atGate(p workflows.Progress) bool {
	return p.State == workflows.StateRunning && p.Phase == workflows.PhaseAwaitingApproval
}

// watchUntil is watch that also returns nil once stop(progress) holds.
func (a *app) watchUntil(ctx context.Context, c client.Client, id, runID string, stop func(workflows.Progress) bool) error {
	tty := !a.json && isatty.IsTerminal(os.Stdout.Fd())
	var r renderer = &lineRenderer{w: a.out, json: a.json}
	if tty {
		r = newBarRenderer(a.out)
	}
	store := liveLedger(ctx, a.liveDB)
	if store != nil {
		defer store.Close()
	}
	result := make(chan error, 1)
	go func() { result <- c.GetWorkflow(ctx, id, runID).Get(ctx, nil) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if p, err := currentProgress(ctx, c, store, id, runID); err == nil {
			r.render(p)
			if stop != nil && stop(p) {
				r.close(false)
				fmt.Fprintf(os.Stderr, "%s: %s %s\n", id, p.Phase, p.Message)
				return nil
			}
		}
		select {
		case err := <-result:
			if p, qerr := queryProgress(ctx, c, id, runID); qerr == nil {
				r.render(p)
			}
			r.close(err == nil)
			return a.outcome(ctx, c, id, err)
		case <-ctx.Done():
			r.close(false)
			return &exitError{exitFailed, fmt.Errorf("stopped watching %s: %v (the update goes on)", id, ctx.Err())}
		case <-tick.C:
		}
	}
}

func queryProgress(ctx context.Context, c client.Client, id, runID string) (workflows.Progress, error) {
	var p workflows.Progress
	v, err := c.QueryWorkflow(ctx, id, runID, workflows.ProgressQuery)
	if err != nil {
		return p, err
	}
	return p, v.Get(&p)
}

// outcome maps a workflow's end to an exit code and one summary line.
func (a *app) outcome(ctx context.Context, c client.Client, id string, err error) error {
	if err == nil {
		a.printResult(ctx, c, id)
		fmt.Fprintf(os.Stderr, "%s completed\n", id)
		return nil
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return &exitError{exitCancelled, fmt.Errorf("%s was cancelled", id)}
	}
	if desc, derr := c.DescribeWorkflowExecution(ctx, id, ""); derr == nil &&
		desc.WorkflowExecutionInfo.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
		return &exitError{exitCancelled, fmt.Errorf("%s was cancelled", id)}
	}
	a.printResult(ctx, c, id)
	if fs, ferr := rolloutFailures(ctx, c, id); ferr == nil && len(fs) > 0 {
		a.print(struct {
			WorkflowID    string         `json:"workflowId"`
			FailedUpdates []failedUpdate `json:"failedUpdates"`
		}{id, fs}, func(w io.Writer) { printFailures(w, fs) })
	}
	return &exitError{exitFailed, fmt.Errorf("%s failed: %s", id, failureOf(err))}
}

// printResult shows the workflow's result: a table of outcomes for a
// rollout, the result JSON otherwise.
func (a *app) printResult(ctx context.Context, c client.Client, id string) {
	var res json.RawMessage
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
		if kind, _, _ := workflows.ParseWorkflowID(id); kind != workflows.KindRollout {
			return
		}
		// A failed rollout has no result; its outcomes are in the progress query.
	}
	var ro rollout.RolloutResult
	if kind, _, _ := workflows.ParseWorkflowID(id); kind == workflows.KindRollout && json.Unmarshal(res, &ro) == nil && len(ro.Outcomes) > 0 && !a.json {
		tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STAGE\tTARGET\tSTATE\tOUTCOME")
		for _, o := range ro.Outcomes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", o.Stage, o.Target, o.State, strings.TrimSpace(o.Outcome+" "+o.Error))
		}
		tw.Flush()
		return
	}
	if len(res) > 0 && string(res) != "null" {
		var buf bytes.Buffer
		_ = json.Indent(&buf, res, "", "  ")
		fmt.Fprintln(a.out, buf.String())
	}
}

type renderer interface {
	render(workflows.Progress)
	// close ends the display; a completed update's bar ends full.
	close(completed bool)
}

// lineRenderer prints one line whenever the phase or the percentage moves
// (for logs and pipes).
type lineRenderer struct {
	w    io.Writer
	json bool
	last string
}

func (l *lineRenderer) render(p workflows.Progress) {
	line := progressLine(p)
	if line == l.last {
		return
	}
	l.last = line
	if l.json {
		fmt.Fprintf(l.w, "%s\n", mustJSON(p))
		return
	}
	fmt.Fprintf(l.w, "%s %s\n", time.Now().Format(time.TimeOnly), line)
}

func (l *lineRenderer) close(bool) {}

func progressLine(p workflows.Progress) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s [%s] %s", p.Kind, p.Target, p.State, p.Phase)
	if p.Total > 0 {
		fmt.Fprintf(&b, " %d/%d %s (%d%%)", p.Done, p.Total, p.Unit, p.Done*100/p.Total)
	}
	if p.Attempt > 1 {
		fmt.Fprintf(&b, " attempt %d", p.Attempt)
	}
	for _, k := range []string{"done", "running", "failed", "skipped"} {
		if n, ok := p.Counts[k]; ok {
			fmt.Fprintf(&b, " %s=%d", k, n)
		}
	}
	if len(p.Stragglers) > 0 {
		fmt.Fprintf(&b, " STRAGGLERS: %s", strings.Join(p.Stragglers, ","))
	}
	if !p.ETA.IsZero() {
		fmt.Fprintf(&b, " eta %s", p.ETA.Format(time.TimeOnly))
	}
	if p.Message != "" {
		fmt.Fprintf(&b, " — %s", p.Message)
	}
	return b.String()
}

// barRenderer draws a live progress bar with the phase, its elapsed time,
// counts, stragglers and ETA.
type barRenderer struct {
	p     *mpb.Progress
	bar   *mpb.Bar
	info  string
	total int64
}

func newBarRenderer(w io.Writer) *barRenderer {
	r := &barRenderer{p: mpb.New(mpb.WithOutput(w), mpb.WithRefreshRate(200*time.Millisecond))}
	// Total 0: mpb honours SetTotal only on a bar built without a total.
	r.bar = r.p.New(0, mpb.BarStyle(),
		mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return r.info }, decor.WCSyncSpaceR)),
		mpb.AppendDecorators(decor.Percentage()))
	return r
}

func (r *barRenderer) render(p workflows.Progress) {
	r.info = progressLine(p)
	if !p.PhaseSince.IsZero() {
		r.info += fmt.Sprintf(" (%s in phase)", time.Since(p.PhaseSince).Round(time.Second))
	}
	if p.Total > 0 {
		r.total = p.Total
		r.bar.SetTotal(p.Total, false)
		r.bar.SetCurrent(p.Done)
	}
}

func (r *barRenderer) close(completed bool) {
	if completed {
		// A completed update is all done, whatever the last answer counted
		// (a no-op update moves no bytes).
		total := max(r.total, 1)
		r.bar.SetTotal(total, false)
		r.bar.SetCurrent(total)
		r.bar.SetTotal(-1, true)
	} else {
		r.bar.Abort(false) // stays on screen where it stopped
	}
	r.p.Wait()
}
