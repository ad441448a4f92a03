package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/fleetsaga/fleetsaga/internal/config"
	"github.com/fleetsaga/fleetsaga/kinds"
	"github.com/fleetsaga/fleetsaga/kinds/rollout"
	"github.com/fleetsaga/fleetsaga/ledger"
	"github.com/fleetsaga/fleetsaga/workflows"
)

func init() {
	commands = append(commands, statusCmd, listCmd, cancelCmd, pauseCmd, resumeCmd, migrateCmd)
}

// notFound turns Temporal's NotFound into a usage-class error; other
// errors exit with what went wrong (temporalErr).
func (a *app) notFound(id string, err error) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return usageErr("no update with workflow ID %s", id)
	}
	return a.temporalErr(id, err)
}

type statusView struct {
	WorkflowID string              `json:"workflowId"`
	Attempts   []attemptView       `json:"attempts,omitempty"`
	RunID      string              `json:"runId"`
	Status     string              `json:"status"`
	Started    time.Time           `json:"started"`
	Closed     *time.Time          `json:"closed,omitempty"`
	Progress   *workflows.Progress `json:"progress,omitempty"`
	// Failure is why a failed run failed, as watch and a rollout's failed
	// updates say it.
	Failure *failureLine `json:"failure,omitempty"`
	// Why is a rollout's starter explain answer (its health gate's last
	// round, what it waits for).
	Why     string               `json:"why,omitempty"`
	Explain *rollout.Explanation `json:"explain,omitempty"`
	// GatePlan is the plan a rollout shows at its gate.
	GatePlan *rollout.StagePlan `json:"gatePlan,omitempty"`
	// FailedUpdates are a rollout's updates that failed in this run.
	FailedUpdates []failedUpdate `json:"failedUpdates,omitempty"`
	// Approvals are the ledger's approvals of a rollout (every run's: the
	// stage names its run) and its signed starts, with who proved them.
	Approvals []ledger.Approval `json:"approvals,omitempty"`
}

func statusCmd(a *app) *cobra.Command {
	var dbURL string
	var gateDigest bool
	cmd := &cobra.Command{
		Use:     "status WORKFLOW_ID",
		Short:   "Show an update's state and progress",
		Example: "  starter status fleetsaga/zone-expunge/zone/3f6d...\n  starter status --json fleetsaga/agent-install/dc/cn-agent\n  starter status --gate-digest fleetsaga/rollout/plan/q3",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.dial(ctx)
			if err != nil {
				return err
			}
			if gateDigest {
				return printGateDigest(ctx, c, args[0])
			}
			desc, err := c.DescribeWorkflowExecution(ctx, args[0], "")
			if err != nil {
				return a.notFound(args[0], err)
			}
			info := desc.WorkflowExecutionInfo
			v := statusView{WorkflowID: info.GetExecution().GetWorkflowId(), RunID: info.GetExecution().GetRunId(),
				Status: strings.TrimPrefix(info.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"), Started: info.GetStartTime().AsTime()}
			if info.GetCloseTime() != nil {
				t := info.GetCloseTime().AsTime()
				v.Closed = &t
			}
			if st := info.GetStatus(); st == enumspb.WORKFLOW_EXECUTION_STATUS_FAILED || st == enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT {
				f := failureOf(c.GetWorkflow(ctx, v.WorkflowID, v.RunID).Get(ctx, nil))
				v.Failure = &f
			}
			store := liveLedger(ctx, dbURL)
			if store != nil {
				defer store.Close()
			}
			if p, err := currentProgress(ctx, c, store, args[0], ""); err == nil {
				v.Progress = &p
			}
			v.GatePlan = gatePlan(ctx, c, args[0])
			if kind, _, _ := workflows.ParseWorkflowID(args[0]); kind == workflows.KindRollout {
				if e, err := queryExplain(ctx, c, args[0]); err == nil {
					v.Explain = &e
					v.Why, _ = answer(explainView{Running: v.Closed == nil, Explain: &e}, time.Now(), defaultStalledAfter)
				}
			}
			if v.FailedUpdates, err = rolloutFailures(ctx, c, args[0]); err != nil {
				return a.temporalErr("list the rollout's failed updates", err)
			}
			if dbURL != "" {
				if v.Attempts, err = ledgerAttempts(ctx, dbURL, args[0]); err != nil {
					return err
				}
			}
			if kind, _, _ := workflows.ParseWorkflowID(args[0]); kind == workflows.KindRollout && store != nil {
				if v.Approvals, err = store.Approvals(ctx, args[0]); err != nil {
					return err
				}
			}
			a.print(v, func(w io.Writer) {
				fmt.Fprintf(w, "%s (run %s): %s since %s\n", v.WorkflowID, v.RunID, v.Status, v.Started.Format(time.RFC3339))
				if v.Progress != nil {
					fmt.Fprintln(w, "  "+progressLine(*v.Progress))
				}
				if v.Failure != nil {
					fmt.Fprintln(w, "  failed: "+v.Failure.String())
				}
				if v.Why != "" {
					fmt.Fprintln(w, "  why: "+v.Why)
				}
				if v.Explain != nil && v.Explain.Gate != nil {
					g := v.Explain.Gate
					fmt.Fprintf(w, "  health gate, stage %s batch %d round %d: %s — %s\n", g.Stage, g.Batch, g.Round, g.Verdict, g.Reason)
				}
				if v.GatePlan != nil {
					printStagePlan(w, *v.GatePlan)
				}
				printFailures(w, v.FailedUpdates)
				printApprovals(w, v.Approvals)
				printAttempts(w, v.RunID, v.Attempts)
			})
			return nil
		},
	}
	cmd.Flags().StringVar(&dbURL, "database-url", os.Getenv("DATABASE_URL"), "ledger PostgreSQL URL to show attempts and the event log (env DATABASE_URL)")
	cmd.Flags().BoolVar(&gateDigest, "gate-digest", false, "print only the full digest of the plan waiting at a gate (for approve --plan-digest); exit 2 when none waits")
	return cmd
}

// printGateDigest prints the digest of the plan a rollout shows at its gate,
// alone on a line, so a script can pass it to approve --plan-digest.
func printGateDigest(ctx context.Context, c client.Client, id string) error {
	sp, err := queryGatePlan(ctx, c, id)
	if err != nil {
		return err
	}
	if sp == nil {
		return usageErr("%s shows no plan at a gate now", id)
	}
	fmt.Println(sp.Digest)
	return nil
}

// printAttempts prints the ledger's attempts grouped by the workflow run
// that made them, this run first: attempt numbers count within one run, so
// a rerun's "attempt 1" is not mistaken for this one's.
// printApprovals lists a rollout's approvals as the ledger proves them:
// who (the keyring's principal, or the typed name of an unsigned one),
// how, with which key, and why.
func printApprovals(w io.Writer, approvals []ledger.Approval) {
	if len(approvals) == 0 {
		return
	}
	fmt.Fprintln(w, "  approvals (ledger):")
	for _, a := range approvals {
		who, how := a.Principal, a.Method
		if who == "" {
			who = a.By
		}
		if how == "" {
			how = "unverified" // recorded before approvals were signed
		}
		if a.KeyFingerprint != "" {
			how += " " + a.KeyFingerprint
		}
		fmt.Fprintf(w, "    %s %s: %s (%s) %q\n", a.At.Local().Format("15:04:05"), a.Stage, who, how, a.Reason)
	}
}

func printAttempts(w io.Writer, thisRun string, attempts []attemptView) {
	var runs []string
	byRun := map[string][]attemptView{}
	for _, at := range attempts {
		if _, seen := byRun[at.RunID]; !seen {
			runs = append(runs, at.RunID)
		}
		byRun[at.RunID] = append(byRun[at.RunID], at)
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i] == thisRun && runs[j] != thisRun })
	for _, run := range runs {
		which := "an earlier run"
		if run == thisRun {
			which = "this run"
		}
		fmt.Fprintf(w, "  run %s (%s):\n", run, which)
		for _, at := range byRun[run] {
			fmt.Fprintf(w, "    attempt %d %s: %s\n", at.Attempt.Attempt, at.ID, attemptEnding(at.Attempt))
			for _, e := range at.Events {
				fmt.Fprintf(w, "      %s %-10s %-10s %s (%s)\n", e.At.Format(time.TimeOnly), e.Step, e.State, e.Message, e.Worker)
			}
		}
	}
}

// attemptEnding is an attempt's state, its outcome where it says more
// (not "failed failed" or "failed attempt failed"), and its error.
func attemptEnding(at ledger.Attempt) string {
	out := string(at.State)
	if redundant := strings.TrimPrefix(at.Outcome, "attempt ") == string(at.State); at.Outcome != "" && !redundant {
		out += " " + at.Outcome
	}
	if at.Error != "" {
		out += ": " + at.Error
	}
	return out
}

type attemptView struct {
	ledger.Attempt
	Events []ledger.Event `json:"events"`
}

// ledgerAttempts reads an update's attempts and their event logs.
func ledgerAttempts(ctx context.Context, dbURL, id string) ([]attemptView, error) {
	if err := config.ValidateDatabaseURL(dbURL); err != nil {
		return nil, usageErr("%v", err)
	}
	store, err := ledger.Open(ctx, dbURL)
	if err != nil {
		return nil, &exitError{exitUnreachable, err}
	}
	defer store.Close()
	attempts, err := store.Attempts(ctx, id)
	if err != nil {
		return nil, &exitError{exitUnreachable, err}
	}
	out := make([]attemptView, 0, len(attempts))
	for _, at := range attempts {
		events, err := store.Events(ctx, at.ID)
		if err != nil {
			return nil, &exitError{exitUnreachable, err}
		}
		out = append(out, attemptView{Attempt: at, Events: events})
	}
	return out, nil
}

func listCmd(a *app) *cobra.Command {
	var kind, target, state, rollout, dbURL string
	var running, fromLedger bool
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List updates (newest first), from Temporal or from the ledger",
		Example: `  starter list --kind sp-firmware --running
  starter list --rollout q3-firmware --state failed
  starter list --ledger --target sp/sled/12 --json     # every attempt the ledger holds`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > 1000 {
				return usageErr("--limit must be within 1..1000")
			}
			if kind != "" && !knownKind(kind) {
				return usageErr("unknown --kind %q", kind)
			}
			if err := checkListState(state, fromLedger); err != nil {
				return err
			}
			if fromLedger {
				if rollout != "" {
					return usageErr("--rollout is a Temporal search attribute: drop --ledger")
				}
				return a.listLedger(cmd.Context(), dbURL, ledger.ListFilter{Kind: kind, Target: target, State: ledger.State(state), Active: running, Limit: limit})
			}
			q := []string{fmt.Sprintf("%s IS NOT NULL", workflows.SAKind.GetName())}
			if kind != "" {
				q = append(q, fmt.Sprintf("%s = %q", workflows.SAKind.GetName(), kind))
			}
			if target != "" {
				q = append(q, fmt.Sprintf("%s = %q", workflows.SATarget.GetName(), target))
			}
			if running {
				q = append(q, `ExecutionStatus = "Running"`)
			}
			if state != "" {
				q = append(q, fmt.Sprintf("%s = %q", workflows.SAState.GetName(), state))
			}
			if rollout != "" {
				q = append(q, fmt.Sprintf("%s = %q", workflows.SARollout.GetName(), rollout))
			}
			c, err := a.dial(cmd.Context())
			if err != nil {
				return err
			}
			resp, err := c.ListWorkflow(cmd.Context(), &workflowservice.ListWorkflowExecutionsRequest{Query: strings.Join(q, " AND "), PageSize: int32(limit)})
			if err != nil {
				return a.temporalErr("list updates", err)
			}
			type row struct {
				WorkflowID string    `json:"workflowId"`
				Status     string    `json:"status"`
				State      string    `json:"state"`
				Phase      string    `json:"phase"`
				Artifact   string    `json:"artifact"`
				Started    time.Time `json:"started"`
			}
			var rows []row
			for _, e := range resp.GetExecutions() {
				sa := e.GetSearchAttributes().GetIndexedFields()
				rows = append(rows, row{WorkflowID: e.GetExecution().GetWorkflowId(),
					Status:   strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"),
					State:    keywordAttr(sa[workflows.SAState.GetName()]),
					Phase:    keywordAttr(sa[workflows.SAPhase.GetName()]),
					Artifact: keywordAttr(sa[workflows.SAArtifact.GetName()]),
					Started:  e.GetStartTime().AsTime()})
			}
			a.print(rows, func(w io.Writer) {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "WORKFLOW ID\tSTATUS\tSTATE\tPHASE\tARTIFACT\tSTARTED")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.WorkflowID, r.Status, r.State, r.Phase, r.Artifact, r.Started.Format(time.RFC3339))
				}
				tw.Flush()
			})
			return nil
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "only this update kind")
	cmd.Flags().StringVar(&target, "target", "", "only this target (e.g. sp/sled/12)")
	cmd.Flags().BoolVar(&running, "running", false, "only running updates")
	cmd.Flags().StringVar(&state, "state", "", "only this state (running, paused, completed, failed, cancelled)")
	cmd.Flags().StringVar(&rollout, "rollout", "", "only updates started by this rollout plan")
	cmd.Flags().BoolVar(&fromLedger, "ledger", false, "list attempts from the ledger (needs --database-url) instead of Temporal's visibility")
	cmd.Flags().StringVar(&dbURL, "database-url", os.Getenv("DATABASE_URL"), "ledger PostgreSQL URL (env DATABASE_URL)")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many")
	return cmd
}

// listLedger prints the ledger's attempts, newest first.
func (a *app) listLedger(ctx context.Context, dbURL string, f ledger.ListFilter) error {
	if err := config.ValidateDatabaseURL(dbURL); err != nil {
		return usageErr("%v", err)
	}
	store, err := ledger.Open(ctx, dbURL)
	if err != nil {
		return &exitError{exitUnreachable, err}
	}
	defer store.Close()
	rows, err := store.List(ctx, f)
	if err != nil {
		return &exitError{exitUnreachable, err}
	}
	a.print(rows, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TARGET\tKIND\tATTEMPT\tSTATE\tPHASE\tOUTCOME\tARTIFACT\tUPDATED\tWORKFLOW ID")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Target, r.Kind, r.Attempt, r.State, r.Phase,
				r.Outcome, r.Artifact, r.UpdatedAt.Format(time.RFC3339), r.WorkflowID)
		}
		tw.Flush()
	})
	return nil
}

func knownKind(k string) bool {
	_, isKind := kinds.Kinds[workflows.Kind(k)]
	return isKind || workflows.Kind(k) == workflows.KindRollout
}

// checkListState refuses a --state that no update can be in (a typo used
// to list nothing, silently): the states of the Web UI's FleetsagaState, or
// with --ledger the ledger's attempt states.
func checkListState(state string, fromLedger bool) error {
	if state == "" {
		return nil
	}
	states := []string{string(workflows.StateRunning), string(workflows.StatePaused), string(workflows.StateCompleted),
		string(workflows.StateFailed), string(workflows.StateCancelled)}
	if fromLedger {
		states = []string{string(ledger.StatePending), string(ledger.StateRunning), string(ledger.StateCompleted),
			string(ledger.StateFailed), string(ledger.StateCancelled)}
	}
	if !slices.Contains(states, state) {
		return usageErr("unknown --state %q (one of %s)", state, strings.Join(states, ", "))
	}
	return nil
}

func cancelCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "cancel WORKFLOW_ID",
		Short:   "Cancel an update; its compensations run before it ends",
		Example: "  starter cancel fleetsaga/bootimage-bump/cluster/prod-east",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.control(cmd.Context(), args[0], "cancel requested", func(c client.Client) error {
				return c.CancelWorkflow(cmd.Context(), args[0], "")
			})
		},
	}
}

func signalCmd(name, signal, short string) func(a *app) *cobra.Command {
	return func(a *app) *cobra.Command {
		return &cobra.Command{
			Use:     name + " WORKFLOW_ID",
			Short:   short,
			Example: "  starter " + name + " fleetsaga/rollout/plan/q3-firmware",
			Args:    exactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				id := args[0]
				if pausable, known := kinds.PausableID(id); known && !pausable {
					return notPausable(id)
				}
				return a.control(cmd.Context(), id, name+" sent", func(c client.Client) error {
					if _, known := kinds.PausableID(id); !known {
						desc, err := c.DescribeWorkflowExecution(cmd.Context(), id, "")
						if err != nil {
							return err
						}
						if !kinds.PausableType(desc.GetWorkflowExecutionInfo().GetType().GetName()) {
							return notPausable(id)
						}
					}
					return c.SignalWorkflow(cmd.Context(), id, "", signal, nil)
				})
			},
		}
	}
}

// notPausable refuses pause/resume of a workflow that does not listen for
// them: the signal would be accepted and silently ignored.
func notPausable(id string) error {
	return usageErr("%s does not support pause/resume: only rollouts and agent-install fan-outs do (cancel stops an update)", id)
}

var (
	pauseCmd  = signalCmd("pause", workflows.PauseSignal, "Pause a rollout or fan-out: running steps finish, no new ones start")
	resumeCmd = signalCmd("resume", workflows.ResumeSignal, "Resume a paused rollout or fan-out")
)

// control runs one steering call and reports it.
func (a *app) control(ctx context.Context, id, done string, call func(client.Client) error) error {
	c, err := a.dial(ctx)
	if err != nil {
		return err
	}
	if err := call(c); err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return usageErr("no running update with workflow ID %s", id)
		}
		return a.temporalErr(id, err)
	}
	a.print(map[string]string{"workflowId": id, "result": done}, func(w io.Writer) { fmt.Fprintf(w, "%s: %s\n", id, done) })
	return nil
}

func migrateCmd(a *app) *cobra.Command {
	var dbURL string
	cmd := &cobra.Command{
		Use:     "migrate",
		Short:   "Apply the ledger's schema migrations, as its owner (workers also do this at start, unless --migrate=false)",
		Example: "  DATABASE_URL=postgres://fleetsaga_owner@db/fleetsaga starter migrate",
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := config.ValidateDatabaseURL(dbURL); err != nil {
				return usageErr("%v", err)
			}
			store, err := ledger.Open(cmd.Context(), dbURL)
			if err != nil {
				return &exitError{exitUnreachable, err}
			}
			defer store.Close()
			applied, err := store.Migrate(cmd.Context())
			if err != nil {
				return &exitError{exitFailed, err}
			}
			a.print(map[string]any{"applied": applied}, func(w io.Writer) {
				if len(applied) == 0 {
					fmt.Fprintln(w, "ledger schema is up to date")
				} else {
					fmt.Fprintf(w, "applied migrations %v\n", applied)
				}
			})
			return nil
		},
	}
	cmd.Flags().StringVar(&dbURL, "database-url", os.Getenv("DATABASE_URL"), "ledger PostgreSQL URL (env DATABASE_URL)")
	return cmd
}
