package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func init() { commands = append(commands, explainCmd) }

// defaultStalledAfter: an SP or host update takes minutes at real device
// speed; one running a quarter of an hour while nothing else holds the
// rollout is worth naming.
const defaultStalledAfter = 15 * time.Minute

// explainView is starter explain's answer.
type explainView struct {
	WorkflowID string `json:"workflowId"`
	Status     string `json:"status"`
	Running    bool   `json:"running"`
	// Answer is the one line that says why the rollout is not moving.
	Answer  string               `json:"answer"`
	Explain *rollout.Explanation `json:"explain,omitempty"`
	// Stalled is the update running longest, when it has run longer
	// than --stalled-after.
	Stalled *rollout.RunningUpdate `json:"stalled,omitempty"`
	// Events are the rollout's own decisions from the ledger, last first
	// (with --database-url).
	Events []ledger.RolloutEvent `json:"events,omitempty"`
}

func explainCmd(a *app) *cobra.Command {
	var dbURL string
	var stalledAfter time.Duration
	cmd := &cobra.Command{
		Use:   "explain ROLLOUT_ID",
		Short: "Say why a rollout is not moving: a window, a freeze, a health gate, an approval, a pause, a threshold or a stalled update",
		Example: `  starter explain fleetsaga/rollout/plan/q4-sp
  starter explain --json --database-url postgres://... fleetsaga/rollout/plan/q4-sp`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if kind, _, _ := workflows.ParseWorkflowID(id); kind != workflows.KindRollout {
				return usageErr("starter explain answers for rollouts (fleetsaga/rollout/plan/NAME), not %s", id)
			}
			ctx := cmd.Context()
			c, err := a.dial(ctx)
			if err != nil {
				return err
			}
			desc, err := c.DescribeWorkflowExecution(ctx, id, "")
			if err != nil {
				return a.notFound(id, err)
			}
			status := desc.WorkflowExecutionInfo.GetStatus()
			v := explainView{WorkflowID: id, Status: strings.TrimPrefix(status.String(), "WORKFLOW_EXECUTION_STATUS_"),
				Running: status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING}
			if store := liveLedger(ctx, dbURL); store != nil {
				defer store.Close()
				if v.Events, err = store.RolloutEvents(ctx, id); err != nil {
					return err
				}
				for i, j := 0, len(v.Events)-1; i < j; i, j = i+1, j-1 {
					v.Events[i], v.Events[j] = v.Events[j], v.Events[i]
				}
			}
			if e, err := queryExplain(ctx, c, id); err == nil {
				v.Explain = &e
			}
			v.Answer, v.Stalled = answer(v, time.Now(), stalledAfter)
			a.print(v, func(w io.Writer) { printExplain(w, v) })
			return nil
		},
	}
	cmd.Flags().StringVar(&dbURL, "database-url", os.Getenv("DATABASE_URL"), "ledger PostgreSQL URL, for the rollout's recorded decisions (env DATABASE_URL)")
	cmd.Flags().DurationVar(&stalledAfter, "stalled-after", defaultStalledAfter, "an update running longer than this, with nothing else holding the rollout, is the answer")
	return cmd
}

func queryExplain(ctx context.Context, c client.Client, id string) (rollout.Explanation, error) {
	var e rollout.Explanation
	v, err := c.QueryWorkflow(ctx, id, "", rollout.ExplainQuery)
	if err != nil {
		return e, err
	}
	return e, v.Get(&e)
}

// answer is the one line: what holds the rollout, else the update that
// has run too long, else that it moves.
func answer(v explainView, now time.Time, stalledAfter time.Duration) (string, *rollout.RunningUpdate) {
	e := v.Explain
	if !v.Running {
		line := "the rollout ended: " + strings.ToLower(v.Status)
		if e != nil && e.Waiting == rollout.WaitStopped {
			line = "the rollout stopped itself in stage " + e.Stage + ": " + e.Reason
		} else if len(v.Events) > 0 && v.Events[0].Kind == "aborted" {
			line = "the rollout stopped itself in stage " + v.Events[0].Stage + ": " + v.Events[0].Reason
		}
		return line, nil
	}
	if e == nil {
		return "running; the rollout did not answer the explain query (no worker, or a build before it)", nil
	}
	since := ""
	if !e.Since.IsZero() {
		since = fmt.Sprintf(" (for %s)", now.Sub(e.Since).Round(time.Second))
	}
	switch e.Waiting {
	case rollout.WaitWindow:
		return "waiting for a maintenance window" + since + ": " + e.Reason, nil
	case rollout.WaitFreeze:
		return "blocked by a change freeze" + since + ": " + e.Reason, nil
	case rollout.WaitGate:
		line := "waiting for a health gate" + since + ": " + e.Reason
		if e.Gate != nil {
			line += fmt.Sprintf("; last round %s: %s", e.Gate.Verdict, e.Gate.Reason)
		}
		return line, nil
	case rollout.WaitApproval:
		return "waiting for approval" + since + ": " + e.Reason, nil
	case rollout.WaitPaused:
		return "paused" + since + ": " + e.Reason, nil
	case rollout.WaitStopped:
		return "stopped by its own check in stage " + e.Stage + ": " + e.Reason + " (running updates finish)", nil
	}
	if len(e.Running) > 0 {
		oldest := e.Running[0]
		if d := now.Sub(oldest.Since); d > stalledAfter {
			return fmt.Sprintf("a stalled update: %s has run for %s (more than %s)", oldest.Target, d.Round(time.Second), stalledAfter), &oldest
		}
	}
	return fmt.Sprintf("moving: %d updates running; %s", len(e.Running), e.Reason), nil
}

func printExplain(w io.Writer, v explainView) {
	fmt.Fprintf(w, "%s: %s\n", v.WorkflowID, v.Answer)
	if e := v.Explain; e != nil {
		if e.Gate != nil {
			fmt.Fprintf(w, "  health gate, stage %s batch %d round %d: %s (%d failed, %d inconclusive rounds)\n",
				e.Gate.Stage, e.Gate.Batch, e.Gate.Round, e.Gate.Verdict, e.Gate.Failures, e.Gate.Inconclusive)
			for _, r := range e.Gate.Results {
				fmt.Fprintf(w, "    %s: %s %s\n", r.Name, r.Verdict, r.Reason)
			}
		}
		if e.Batch > 0 {
			fmt.Fprintf(w, "  batch size: %d\n", e.Batch)
		}
		for _, r := range e.Running {
			fmt.Fprintf(w, "  running: %s since %s\n", r.Target, r.Since.Format(time.RFC3339))
		}
	}
	for i, ev := range v.Events {
		if i == 5 {
			fmt.Fprintf(w, "  … %d earlier decisions (--json lists them)\n", len(v.Events)-i)
			break
		}
		fmt.Fprintf(w, "  %s %s stage %s: %s %s\n", ev.At.Format(time.RFC3339), ev.Kind, ev.Stage, ev.Verdict, ev.Reason)
	}
}
